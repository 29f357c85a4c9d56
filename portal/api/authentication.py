"""`Authorization: Token <key>` against the hashed, named tokens of `portal.tenancy`.

DRF's TokenAuthentication reads the header (and answers a missing or malformed one with its
WWW-Authenticate 401); the key is then looked up by its SHA-256 (`services.use_token`), so an
unknown, revoked or expired token is a 401 saying which. `request.auth` is the ApiToken.
"""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed

from portal.tenancy import services


class ApiTokenAuthentication(TokenAuthentication):
    """The portal's API tokens (shown as `tokenAuth` in the OpenAPI schema, as DRF's)."""

    def authenticate_credentials(self, key: str):
        try:
            token = services.use_token(key)
        except services.TokenRejected as rejected:
            raise AuthenticationFailed(str(rejected)) from None
        return token.user, token
