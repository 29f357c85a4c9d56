"""Named API tokens, issued and revoked through the same services by every door:
`POST /api/v1/auth/token/` (`allot login`), `DELETE` on the same path, `/api/v1/auth/tokens/`,
the user's page (`/me/`) and `manage.py issue_token` (issue 22 item 7)."""

import re
from unittest import mock

import pytest
from django.core.management import call_command
from django.test import Client

from portal.tenancy import services
from portal.tenancy.models import ApiToken, token_digest

pytestmark = pytest.mark.django_db
LOGIN = "/api/v1/auth/token/"
TOKENS = "/api/v1/auth/tokens/"
BOB = {"username": "bob", "password": "x-test-password-1"}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def login(api, **fields) -> dict:
    response = api().post(LOGIN, {**BOB, **fields}, format="json")
    assert response.status_code == 200, response.content
    return response.json()


def with_token(api, key: str):
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def shown_key(page: str) -> str:
    return re.search(r'id="new-token"[^>]* value="([^"]+)"', page)[1]


def test_my_page_makes_a_named_token_shows_it_once_and_lists_it(api, member):
    client = browser(member)
    page = client.post("/me/", {"action": "create-token", "name": "laptop", "expires_in": "30d"})
    key = shown_key(page.content.decode())
    token = ApiToken.objects.get(user=member)
    assert token.name == "laptop" and token.digest == token_digest(key) and token.expires_at
    again = client.get("/me/").content.decode()
    assert key not in again and "laptop" in again and f"{token.prefix}…" in again
    assert with_token(api, key).get("/api/v1/projects/").status_code == 200


def test_my_page_names_a_bad_field_and_makes_nothing(member):
    client = browser(member)
    page = client.post("/me/", {"action": "create-token", "name": "", "expires_in": "30d"})
    assert "Name: This field may not be blank." in page.content.decode()
    page = client.post("/me/", {"action": "create-token", "name": "x", "expires_in": "soon"})
    assert "Expires: must be a duration" in page.content.decode()
    assert not ApiToken.objects.exists()


def test_revoking_on_my_page_signs_out_that_token_only(api, member):
    first, second = login(api, name="one"), login(api, name="two")
    client = browser(member)
    page = client.post("/me/", {"action": "revoke-token", "token": first["id"]}, follow=True)
    assert "Token &#x27;one&#x27; revoked" in page.content.decode()
    refused = with_token(api, first["token"]).get("/api/v1/projects/")
    assert refused.status_code == 401
    assert refused.json()["detail"] == "Token revoked (revoked by its owner): sign in again."
    assert with_token(api, second["token"]).get("/api/v1/projects/").status_code == 200
    listed = client.get("/me/").content.decode()
    assert f'data-token="{second["id"]}"' in listed
    assert f'data-token="{first["id"]}"' not in listed


def test_my_page_does_not_revoke_another_users_token(api, member, viewer):
    vera_token, vera_key = services.issue_token(viewer, "vera's")
    page = browser(member).post("/me/", {"action": "revoke-token", "token": vera_token.pk},
                                follow=True)  # fmt: skip
    assert "No such token" in page.content.decode()
    assert with_token(api, vera_key).get("/api/v1/projects/").status_code == 200


def test_delete_on_the_login_path_revokes_the_token_it_signed_in_with(api, member):
    first, second = login(api), login(api)
    assert with_token(api, first["token"]).delete(LOGIN).status_code == 204
    assert with_token(api, first["token"]).get("/api/v1/projects/").status_code == 401
    assert with_token(api, second["token"]).get("/api/v1/projects/").status_code == 200


def test_delete_on_the_login_path_needs_a_token_not_a_session(api, member):
    assert api().delete(LOGIN).status_code == 401
    assert with_token(api, "not-a-real-token").delete(LOGIN).status_code == 401
    client = api()
    client.force_authenticate(member)  # as a browser session: no token to revoke
    answer = client.delete(LOGIN)
    assert answer.status_code == 400 and "Authorization" in answer.json()


def test_a_stale_token_in_the_header_does_not_stop_a_login(api, member):
    response = with_token(api, "not-a-real-token").post(LOGIN, BOB, format="json")
    assert response.status_code == 200 and response.json()["username"] == "bob"


def test_every_door_issues_through_issue_token(api, member):
    with mock.patch.object(services, "issue_token", wraps=services.issue_token) as issue:
        login(api, name="script")
        browser(member).post("/me/", {"action": "create-token", "name": "page"})
        call_command("issue_token", "bob", "--name", "command", stdout=mock.Mock())
    assert [call.args[:2] for call in issue.call_args_list] == [
        (member, "script"), (member, "page"), (member, "command"),
    ]  # fmt: skip


def test_every_door_revokes_through_revoke_token(api, member):
    made = [login(api) for _ in range(3)]
    with mock.patch.object(services, "revoke_token", wraps=services.revoke_token) as revoke:
        browser(member).post("/me/", {"action": "revoke-token", "token": made[0]["id"]})
        with_token(api, made[1]["token"]).delete(LOGIN)
        with_token(api, made[2]["token"]).delete(f"{TOKENS}{made[2]['id']}/")
    assert [(c.args[0].pk, c.kwargs["by"]) for c in revoke.call_args_list] == [
        (made[0]["id"], member), (made[1]["id"], member), (made[2]["id"], member),
    ]  # fmt: skip
    assert not ApiToken.objects.filter(revoked_at__isnull=True).exists()


def test_the_schema_says_revoking_needs_a_token_and_login_does_not():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(public=True)["paths"]
    assert paths[LOGIN]["post"].get("security") in ([], [{}], None)
    assert {"tokenAuth": []} in paths[LOGIN]["delete"]["security"]
    listed = paths[TOKENS]["get"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert "results" in str(listed) or "$ref" in str(listed)
    assert {"tokenAuth": []} in paths[TOKENS + "{id}/"]["delete"]["security"]
    issued = paths[LOGIN]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert issued == {"$ref": "#/components/schemas/IssuedToken"}
