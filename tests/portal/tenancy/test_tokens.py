"""One API token per user, issued and revoked through the same two services by every door:
`POST /api/v1/auth/token/` (`allot login`), `DELETE` on the same path, the user's page (`/me/`)
and `manage.py issue_token`."""

from unittest import mock

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token

from portal.tenancy import services

pytestmark = pytest.mark.django_db
LOGIN = "/api/v1/auth/token/"
BOB = {"username": "bob", "password": "x-test-password-1"}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def login(api) -> str:
    response = api().post(LOGIN, BOB, format="json")
    assert response.status_code == 200, response.content
    return response.json()["token"]


def with_token(api, key: str):
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_login_the_command_and_my_page_hand_out_one_token(api, member, capsys):
    key = login(api)
    call_command("issue_token", "bob")
    assert capsys.readouterr().out.strip().splitlines()[-1] == key
    page = browser(member).post("/me/", {"action": "create-token"}).content.decode()
    assert key not in page and "You have an API token already" in page  # shown once, not again
    assert 'value="replace-token"' in page and 'value="create-token"' not in page
    assert list(Token.objects.values_list("key", flat=True)) == [key]
    assert with_token(api, key).get("/api/v1/projects/").status_code == 200


def test_a_token_made_on_my_page_is_the_one_login_then_hands_out(api, member):
    client = browser(member)
    assert 'value="create-token"' in client.get("/me/").content.decode()
    page = client.post("/me/", {"action": "create-token"}).content.decode()
    key = Token.objects.get(user=member).key
    assert key in page
    assert key not in client.get("/me/").content.decode()  # shown once
    assert login(api) == key


def test_replacing_the_token_on_my_page_signs_out_its_old_users(api, member):
    old = login(api)
    page = browser(member).post("/me/", {"action": "replace-token"}).content.decode()
    new = Token.objects.get(user=member).key
    assert new != old and new in page and old not in page
    assert with_token(api, old).get("/api/v1/projects/").status_code == 401
    assert login(api) == new


def test_delete_on_the_login_path_revokes_the_callers_token(api, member):
    old = login(api)
    assert with_token(api, old).delete(LOGIN).status_code == 204
    assert not Token.objects.exists()
    assert with_token(api, old).get("/api/v1/projects/").status_code == 401
    assert login(api) != old  # the next sign-in makes a new one


def test_revoking_needs_credentials_and_touches_only_the_callers_token(api, member, viewer):
    theirs = api(viewer)  # the fixture gives vera a token
    assert api().delete(LOGIN).status_code == 401
    assert with_token(api, "not-a-real-token").delete(LOGIN).status_code == 401
    login(api)
    assert api(member).delete(LOGIN).status_code == 204
    assert list(Token.objects.values_list("user__username", flat=True)) == ["vera"]
    assert theirs.get("/api/v1/projects/").status_code == 200


def test_a_stale_token_in_the_header_does_not_stop_a_login(api, member):
    response = with_token(api, "not-a-real-token").post(LOGIN, BOB, format="json")
    assert response.status_code == 200 and response.json()["username"] == "bob"


def test_revoking_on_my_page_and_over_the_api_go_through_revoke_token(api, member):
    login(api)
    with mock.patch.object(services, "revoke_token", wraps=services.revoke_token) as revoke:
        browser(member).post("/me/", {"action": "revoke-token"})
        login(api)
        api(member).delete(LOGIN)
    assert [call.args[0] for call in revoke.call_args_list] == [member, member]
    assert not Token.objects.exists()


def test_every_door_issues_through_issue_token(api, member):
    with mock.patch.object(services, "issue_token", wraps=services.issue_token) as issue:
        login(api)
        browser(member).post("/me/", {"action": "replace-token"})
        call_command("issue_token", "bob", stdout=mock.Mock())
    assert [call.kwargs.get("replace", False) for call in issue.call_args_list] == [
        False, True, False,
    ]  # fmt: skip


def test_the_schema_says_revoking_needs_a_token_and_login_does_not():
    from drf_spectacular.generators import SchemaGenerator

    operations = SchemaGenerator().get_schema(public=True)["paths"][LOGIN]
    assert operations["post"].get("security") in ([], [{}], None)
    assert {"tokenAuth": []} in operations["delete"]["security"]
