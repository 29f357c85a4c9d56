"""Issue 22 item 7: a user lists and revokes their own tokens only - another's is a 404 - and
cluster admins list and revoke anyone's under /users/{username}/tokens/."""

import pytest

from portal.tenancy import services
from portal.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db
TOKENS = "/api/v1/auth/tokens/"


@pytest.fixture
def bobs(member):
    return services.issue_token(member, "bob's laptop")[0]


@pytest.mark.parametrize("persona", ["viewer", "outsider"])
def test_others_neither_see_nor_revoke_a_researchers_token(api, bobs, persona, request):
    client = api(request.getfixturevalue(persona))
    assert bobs.pk not in [t["id"] for t in client.get(TOKENS).json()["results"]]
    assert client.get(f"{TOKENS}{bobs.pk}/").status_code == 404
    assert client.delete(f"{TOKENS}{bobs.pk}/").status_code == 404
    assert client.get("/api/v1/users/bob/tokens/").status_code == 403
    assert client.delete(f"/api/v1/users/bob/tokens/{bobs.pk}/").status_code == 403
    bobs.refresh_from_db()
    assert bobs.revoked_at is None


def test_a_researcher_sees_only_their_own_tokens(api, member, bobs, outsider):
    services.issue_token(outsider, "eve's")
    names = [t["name"] for t in api(member).get(TOKENS).json()["results"]]
    assert sorted(names) == ["bob's laptop", "test client"]  # the fixture's client signs in too


def test_a_cluster_admin_lists_and_revokes_a_users_token(api, cluster_admin, bobs):
    admin = api(cluster_admin)
    listed = admin.get("/api/v1/users/bob/tokens/").json()["results"]
    assert [(t["id"], t["name"], t["current"]) for t in listed] == [
        (bobs.pk, "bob's laptop", False)
    ]
    assert admin.delete(f"/api/v1/users/bob/tokens/{bobs.pk}/").status_code == 204
    bobs.refresh_from_db()
    assert bobs.revoked_reason == "revoked by root"
    assert admin.get("/api/v1/users/nobody/tokens/").status_code == 404
    assert admin.get(f"/api/v1/users/root/tokens/{bobs.pk}/").status_code == 404  # not root's


def test_anonymous_callers_get_401(api, bobs):
    assert api().get(TOKENS).status_code == 401
    assert api().delete(f"{TOKENS}{bobs.pk}/").status_code == 401
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 1


def test_the_django_admin_lists_and_revokes_tokens_but_shows_no_key(cluster_admin, bobs):
    from django.test import Client

    client = Client()
    client.force_login(cluster_admin)
    listed = client.get("/admin/tenancy/apitoken/")
    assert listed.status_code == 200 and "bob&#x27;s laptop" in listed.content.decode()
    assert client.get("/admin/tenancy/apitoken/add/").status_code == 403
    client.post("/admin/tenancy/apitoken/", {"action": "revoke", "_selected_action": [bobs.pk]})
    bobs.refresh_from_db()
    assert bobs.revoked_reason == "revoked by root"
