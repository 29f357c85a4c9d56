"""The provider's routes: django-oauth-toolkit under /o/ and a sign-in page at /accounts/login/."""

import os

from django.contrib.auth import views as auth_views
from django.http import JsonResponse
from django.urls import include, path
from jwcrypto import jwk


def published_keys(request):
    """The JWKS of IDP_JWKS_KEY: a key other than the one the provider signs with (a forger's
    scenario: ID tokens whose signature no published key verifies)."""
    key = jwk.JWK.from_pem(os.environ["IDP_JWKS_KEY"].encode())
    public = {
        **key.export_public(as_dict=True),
        "alg": "RS256",
        "use": "sig",
        "kid": key.thumbprint(),
    }
    return JsonResponse({"keys": [public]})


urlpatterns = [
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("o/", include("oauth2_provider.urls", namespace="oauth2_provider")),
]
if os.environ.get("IDP_JWKS_KEY"):
    urlpatterns.insert(0, path("o/.well-known/jwks.json", published_keys))
