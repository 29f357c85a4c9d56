"""Issue 22 item 7: a token no longer survives its owner's password change, whichever door the
new password comes through; Django re-hashing an unchanged password at sign-in revokes nothing.

The first test is the issue's reproduction: it fails on the main before named tokens (the token
kept working after the password changed)."""

from unittest import mock

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client

from portal.tenancy import services
from portal.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db
LOGIN = "/api/v1/auth/token/"
OLD, NEW = "x-test-password-1", "a-brand-new-pass-7"


@pytest.fixture(autouse=True)
def fresh_throttle():
    """The login throttle counts in the cache, which outlives each test's transaction."""
    cache.clear()
    yield
    cache.clear()


def token_of(api, username="bob", password=OLD) -> str:
    answer = api().post(LOGIN, {"username": username, "password": password}, format="json")
    assert answer.status_code == 200, answer.content
    return answer.json()["token"]


def status_with(api, key: str) -> tuple[int, str]:
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    answer = client.get("/api/v1/projects/")
    return answer.status_code, answer.json().get("detail", "") if answer.status_code != 200 else ""


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_token_stops_working_when_its_owner_changes_the_password(api, member):
    key = token_of(api)
    services.set_password(member, NEW)
    assert status_with(api, key) == (401, "Token revoked (password changed): sign in again.")
    assert status_with(api, token_of(api, password=NEW))[0] == 200  # the new password signs in


def test_changing_the_password_on_my_page_revokes_every_token_of_mine_only(api, member, viewer):
    mine, also_mine, veras = token_of(api), token_of(api), token_of(api, "vera")
    page = signed_in(member).post(
        "/me/",
        {"action": "password", "old_password": OLD, "new_password1": NEW, "new_password2": NEW},
        follow=True,
    )
    assert "Password changed; your API tokens were revoked." in page.content.decode()
    assert status_with(api, mine)[0] == status_with(api, also_mine)[0] == 401
    assert status_with(api, veras)[0] == 200
    assert not ApiToken.objects.filter(user=member, revoked_at__isnull=True).exists()


def test_a_cluster_admin_setting_a_users_password_revokes_their_tokens(api, member, cluster_admin):
    key = token_of(api)
    signed_in(cluster_admin).post("/users/bob/password/", {"password": NEW})
    assert status_with(api, key)[0] == 401


def test_manage_py_changepassword_revokes_the_tokens(api, member):
    key = token_of(api)
    with mock.patch("getpass.getpass", return_value=NEW):
        call_command("changepassword", "bob", stdout=mock.Mock())
    assert status_with(api, key) == (401, "Token revoked (password changed): sign in again.")


def test_the_django_admins_password_form_revokes_the_tokens(api, member, cluster_admin):
    key = token_of(api)
    answer = signed_in(cluster_admin).post(
        f"/admin/auth/user/{member.pk}/password/", {"password1": NEW, "password2": NEW}
    )
    assert answer.status_code == 302, answer.content.decode()[:2000]
    assert status_with(api, key)[0] == 401


def test_rehashing_an_unchanged_password_at_sign_in_revokes_nothing(api, member, settings):
    key = token_of(api)
    settings.PASSWORD_HASHERS = [
        "django.contrib.auth.hashers.PBKDF2PasswordHasher",  # preferred: MD5 hashes get upgraded
        "django.contrib.auth.hashers.MD5PasswordHasher",
    ]
    token_of(api)  # checks the password, and Django re-hashes it with PBKDF2
    member.refresh_from_db()
    assert member.password.startswith("pbkdf2_sha256$")
    assert status_with(api, key)[0] == 200


def test_the_password_forms_say_a_change_revokes_the_tokens(member):
    from django.contrib.auth.password_validation import password_validators_help_texts

    page = signed_in(member).get("/me/").content.decode()
    assert "Changing your password revokes all your API tokens" in page
    assert "Changing your password revokes all your API tokens." in password_validators_help_texts()
