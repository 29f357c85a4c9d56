"""Issue 22 item 7: no token is stored in plaintext. The table holds a SHA-256 and a short
prefix; the plaintext DRF tokens of before are converted by the migration (their keys still
sign in) and their table is dropped."""

import hashlib

import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from portal.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db
BOB = {"username": "bob", "password": "x-test-password-1"}


def every_stored_value() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM tenancy_apitoken")
        return repr(cursor.fetchall())


def test_the_key_is_nowhere_in_the_token_table(api, member):
    key = api().post("/api/v1/auth/token/", BOB, format="json").json()["token"]
    stored = every_stored_value()
    assert key not in stored and key[12:] not in stored and key[-20:] not in stored
    assert hashlib.sha256(key.encode()).hexdigest() in stored


def test_the_plaintext_token_table_is_gone():
    assert "authtoken_token" not in connection.introspection.table_names()
    assert not apps.is_installed("rest_framework.authtoken")


def test_the_migration_hashes_plaintext_tokens_and_drops_their_table(api, member):
    """The data step of tenancy 0005, run on a plaintext table as the old DRF app left it."""
    from importlib import import_module

    migration = import_module("portal.tenancy.migrations.0005_api_tokens")
    legacy = "0123456789abcdef0123456789abcdef01234567"
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE authtoken_token (key varchar(40) PRIMARY KEY, "
            "created timestamptz NOT NULL, user_id integer NOT NULL)"
        )
        cursor.execute(
            "INSERT INTO authtoken_token VALUES (%s, %s, %s)",
            [legacy, timezone.now(), member.pk],
        )
        cursor.execute("INSERT INTO django_migrations (app, name, applied) "
                       "VALUES ('authtoken', '0001_initial', now())")  # fmt: skip
    with connection.schema_editor() as editor:
        migration.hash_plaintext_tokens(apps, editor)
    assert "authtoken_token" not in connection.introspection.table_names()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM django_migrations WHERE app = 'authtoken'")
        assert cursor.fetchone() == (0,)
    converted = ApiToken.objects.get()
    assert (converted.user, converted.prefix) == (member, legacy[:6])
    assert legacy not in every_stored_value()
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {legacy}")  # an old `allot login` still works
    assert client.get("/api/v1/projects/").status_code == 200
