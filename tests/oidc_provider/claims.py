"""The claims the test provider puts in its ID tokens: the standard profile and email claims and
`groups`, the names of the user's Django groups (what an institution's IdP sends). With
IDP_GROUPS_IN_ID_TOKEN=0 the groups are at the userinfo endpoint only, as some providers do."""

import os

from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "groups"}

    def get_additional_claims(self, request):
        user = request.user
        return {
            "preferred_username": user.username,
            "name": user.get_full_name() or user.username,
            "email": user.email,
            "groups": sorted(user.groups.values_list("name", flat=True)),
        }

    def get_id_token_dictionary(self, token, token_handler, request):
        claims, expiration_time = super().get_id_token_dictionary(token, token_handler, request)
        if os.environ.get("IDP_GROUPS_IN_ID_TOKEN", "1") == "0":
            claims.pop("groups", None)
        return claims, expiration_time
