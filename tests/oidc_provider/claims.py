"""The claims the test provider puts in its ID tokens: the standard profile and email claims and
`groups`, the names of the user's Django groups (what an institution's IdP sends)."""

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
