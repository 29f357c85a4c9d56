"""Settings of the test identity provider (django-oauth-toolkit with OpenID Connect).

Everything comes from the environment `harness.Provider` sets: IDP_DB (the SQLite file),
IDP_ISSUER (http://127.0.0.1:PORT/o), IDP_RSA_KEY (the PEM private key the ID tokens are signed
with), IDP_ID_TOKEN_EXPIRE_S (seconds an ID token lives; negative: already expired when issued)
and IDP_JWKS_KEY (when set, the JWKS endpoint publishes this key's public half instead of the
signing key's, so every ID token it hands out is signed by a key the issuer does not publish).
"""

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent

DEBUG = False
SECRET_KEY = "test-identity-provider-not-a-secret"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
ROOT_URLCONF = "tests.oidc_provider.urls"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # test users only

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "oauth2_provider",
    "tests.oidc_provider",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [HERE / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("IDP_DB", ":memory:"),
    }
}
# The portal and the provider both run on 127.0.0.1 (on other ports), and a browser keeps one
# cookie jar per host: the provider's cookies get names of their own.
SESSION_COOKIE_NAME = "idp_sessionid"
CSRF_COOKIE_NAME = "idp_csrftoken"
LOGIN_URL = "/accounts/login/"

OAUTH2_PROVIDER = {
    "OIDC_ENABLED": True,
    "OIDC_ISS_ENDPOINT": os.environ.get("IDP_ISSUER", ""),
    "OIDC_RSA_PRIVATE_KEY": os.environ.get("IDP_RSA_KEY", ""),
    "OIDC_RP_INITIATED_LOGOUT_ENABLED": True,
    "OIDC_RP_INITIATED_LOGOUT_ALWAYS_PROMPT": False,
    "PKCE_REQUIRED": True,
    "ALLOW_LOCALHOST_LOOPBACK": True,  # pytest-django's live server is http://localhost:PORT
    "ID_TOKEN_EXPIRE_SECONDS": int(os.environ.get("IDP_ID_TOKEN_EXPIRE_S", "300")),
    "OAUTH2_VALIDATOR_CLASS": "tests.oidc_provider.claims.Validator",
    "SCOPES": {
        "openid": "OpenID Connect",
        "profile": "Your name and username",
        "email": "Your email address",
        "groups": "The groups you belong to",
    },
}
