"""API tokens: sign in for a new one, list yours, revoke one (issue 22 item 7).

`POST /auth/token/` exchanges a username and password for a NEW named token each time (other
clients' tokens stay valid) and returns its key this once; only its SHA-256 is stored.
`GET /auth/tokens/` lists the caller's live tokens, `DELETE /auth/tokens/{id}/` revokes one;
cluster admins do the same for anyone under `/users/{username}/tokens/`. Another user's token
is a 404. A password change revokes all of a user's tokens (`portal.tenancy.passwords`).
"""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import generics, status
from rest_framework.exceptions import AuthenticationFailed, Throttled, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.serializers import CharField, ListField
from rest_framework.views import APIView

from portal import access
from portal.api.authentication import ApiTokenAuthentication
from portal.api.permissions import IsClusterAdmin
from portal.api.serializers.tokens import (
    IssuedTokenSerializer,
    TokenRequestSerializer,
    TokenSerializer,
)
from portal.api.throttling import LoginThrottle, lockout_message, lockout_minutes
from portal.audit import services as audit
from portal.tenancy import services
from portal.tenancy.models import ApiToken


class ObtainToken(APIView):
    """POST a username and password (and a `name`, an `expires_in`): a new API token, its key
    shown this once (`allot login`). DELETE (signed in with a token): revoke that token.

    A wrong pair is a 401 (with `WWW-Authenticate: Token`, the scheme the API takes) that does
    not say which half was wrong; a body that is not a username and password is a 400 naming the
    field. Signing in needs no
    credentials (a stale token in the header must not stop a login); revoking does. Password
    tries are throttled per client address, and too many failures for an account or from an
    address lock both out for a while (django-axes, as at /login/ and /admin/login/): a 429
    until then, even for the right password.
    """

    throttle_classes = [LoginThrottle]
    throttle_scope = "login"

    def get_authenticators(self):
        return [] if self._signing_in() else super().get_authenticators()

    def get_permissions(self):
        return [AllowAny()] if self._signing_in() else [IsAuthenticated()]

    def get_authenticate_header(self, request) -> str:
        # signing in uses no authenticator, but a refused password is still a 401: it needs a
        # challenge, and the API's scheme is the token it is asking for
        return ApiTokenAuthentication().authenticate_header(request)

    def _signing_in(self) -> bool:
        # no request yet while the schema generator builds its mock one
        return getattr(self.request, "method", None) == "POST"

    @extend_schema(request=TokenRequestSerializer, responses=IssuedTokenSerializer)
    def post(self, request) -> Response:
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        user = authenticate(  # with the request: axes counts the failure and may lock out
            request, username=fields["username"], password=fields["password"]
        )
        if getattr(request, "axes_locked_out", False):
            raise Throttled(wait=lockout_minutes() * 60, detail=lockout_message())
        if user is None:
            raise AuthenticationFailed("wrong username or password")
        token, key = services.issue_token(user, fields["name"], fields["expires_in"])
        audit.record("auth.login", user, actor=user, note=f"via {request.path}")  # no session
        shown = TokenSerializer(token, context={"request": request}).data
        return Response({"token": key, "username": user.get_username(), **shown})

    @extend_schema(
        request=None,
        responses={
            204: None,
            400: OpenApiResponse(
                inline_serializer(
                    "NoTokenToRevoke", {"Authorization": ListField(child=CharField())}
                ),
                description="Signed in without a token (a browser session): nothing to revoke.",
            ),
        },
    )
    def delete(self, request) -> Response:
        if not isinstance(request.auth, ApiToken):
            raise ValidationError(
                {"Authorization": ["sign in with the token to revoke (or use /auth/tokens/{id}/)"]}
            )
        services.revoke_token(request.auth, by=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class _Tokens:
    """The live tokens of the owner in the URL (or the caller's own) the caller may manage."""

    serializer_class = TokenSerializer

    def get_queryset(self):
        return access.tokens_for(self.request.user, self.owner())

    def owner(self):
        username = self.kwargs.get("username")
        if username is None:
            return None
        found = get_user_model().objects.filter(username=username).first()
        if found is None:
            raise Http404(f"User {username} not found.")
        return found

    def perform_destroy(self, token: ApiToken) -> None:
        services.revoke_token(token, by=self.request.user)


class MyTokenList(_Tokens, generics.ListAPIView):
    """GET your live API tokens, newest first: name, first characters, when made, last used
    (to the minute) and when they expire; never a key. New ones come from `POST /auth/token/`
    or your page (`/me/`)."""


class MyTokenDetail(_Tokens, generics.RetrieveDestroyAPIView):
    """GET one of your tokens; DELETE revokes it (clients using it get 401 from then on)."""


class UserTokenList(_Tokens, generics.ListAPIView):
    """GET a user's live API tokens (cluster admins)."""

    permission_classes = [IsClusterAdmin]


class UserTokenDetail(_Tokens, generics.RetrieveDestroyAPIView):
    """GET one token of a user; DELETE revokes it (cluster admins)."""

    permission_classes = [IsClusterAdmin]
