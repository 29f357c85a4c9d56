"""Per-user limits over REST (issue 36, docs/user-fairness.md): a project's admins set its
default and members' overrides; members read the default and their own; a bad value is a 400
naming the field and nothing is stored; the schema documents the endpoints."""

from __future__ import annotations

import pytest

from portal.audit.models import AuditEntry
from portal.tenancy.models import UserLimit

pytestmark = pytest.mark.django_db
URL = "/api/v1/projects/team-a/user-limits/"


def test_a_project_admin_sets_the_default_and_an_override_and_members_read_theirs(
    api, owner, member, viewer
):
    admin = api(owner)
    made = admin.post(URL, {"max_gpus": 2, "max_pending": 5}, format="json")
    assert made.status_code == 201, made.content
    assert made.json() | {"id": 0, "created_at": ""} == {
        "id": 0, "user": None, "max_gpus": 2, "max_running": None, "max_pending": 5,
        "max_interactive": None, "created_at": "",
    }  # fmt: skip
    own = admin.post(URL, {"user": "bob", "max_gpus": 3, "max_interactive": 1}, format="json")
    assert own.status_code == 201, own.content
    assert AuditEntry.objects.filter(action="user_limit.created").count() == 2
    assert [row["user"] for row in admin.get(URL).json()["results"]] == [None, "bob"]
    assert [row["user"] for row in api(member).get(URL).json()["results"]] == [None, "bob"]
    assert [row["user"] for row in api(viewer).get(URL).json()["results"]] == [None]
    hidden = api(viewer).get(f"{URL}{own.json()['id']}/")
    assert hidden.status_code == 404  # a teammate's override is not the viewer's to read
    changed = admin.patch(f"{URL}{own.json()['id']}/", {"max_gpus": None}, format="json")
    assert changed.status_code == 200 and changed.json()["max_gpus"] is None
    assert AuditEntry.objects.filter(action="user_limit.changed").exists()
    assert admin.delete(f"{URL}{own.json()['id']}/").status_code == 204
    assert UserLimit.objects.filter(user=member).count() == 0


def test_a_researcher_may_not_set_their_own_limit(api, member):
    refused = api(member).post(URL, {"user": "bob", "max_gpus": 99}, format="json")
    assert refused.status_code == 403
    assert "project's admins" in refused.json()["detail"]
    assert UserLimit.objects.count() == 0


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"max_gpus": -1}, "max_gpus", "greater than or equal to 0"),
        ({"max_gpus": "2"}, "max_gpus", "must be a number"),
        ({"max_running": 1.5}, "max_running", "must be a whole number"),
        ({"max_pending": -3}, "max_pending", "greater than or equal to 0"),
        ({"max_interactive": 100001}, "max_interactive", "less than or equal to 100000"),
        ({"max_running": True}, "max_running", "not a boolean"),
        ({}, "max_gpus", "give at least one of"),
        ({"max_gpus": None, "max_running": None}, "max_gpus", "give at least one of"),
        ({"user": "eve", "max_gpus": 1}, "user", "eve is not a member of team-a"),
        ({"user": "", "max_gpus": 1}, "user", "may not be empty"),
        ({"user": 7, "max_gpus": 1}, "user", "must be a string"),
    ],
)
def test_a_bad_value_is_a_400_naming_the_field_and_nothing_is_stored(
    api, owner, outsider, body, field, words
):
    refused = api(owner).post(URL, body, format="json")
    assert refused.status_code == 400, refused.content
    assert words in " ".join(refused.json()[field])
    assert UserLimit.objects.count() == 0


def test_an_unknown_user_is_a_404_naming_the_field(api, owner):
    refused = api(owner).post(URL, {"user": "nobody", "max_gpus": 1}, format="json")
    assert refused.status_code == 404 and refused.json() == {"user": ["no user named 'nobody'"]}
    assert UserLimit.objects.count() == 0


def test_a_second_default_or_override_is_a_409_naming_user(api, owner, member):
    admin = api(owner)
    assert admin.post(URL, {"max_gpus": 2}, format="json").status_code == 201
    again = admin.post(URL, {"max_running": 2}, format="json")
    assert again.status_code == 409 and "default per-user limit" in again.json()["user"][0]
    assert admin.post(URL, {"user": "bob", "max_gpus": 2}, format="json").status_code == 201
    twice = admin.post(URL, {"user": "bob", "max_gpus": 4}, format="json")
    assert twice.status_code == 409 and "bob has a per-user limit" in twice.json()["user"][0]
    assert UserLimit.objects.count() == 2


def test_a_patch_keeps_whose_limit_it_is_and_one_limit_at_least(api, owner, member):
    admin = api(owner)
    made = admin.post(URL, {"user": "bob", "max_gpus": 2}, format="json").json()
    moved = admin.patch(f"{URL}{made['id']}/", {"user": "alice"}, format="json")
    assert moved.status_code == 400 and "cannot be changed" in moved.json()["user"][0]
    emptied = admin.patch(f"{URL}{made['id']}/", {"max_gpus": None}, format="json")
    assert emptied.status_code == 400 and "give at least one" in emptied.json()["max_gpus"][0]
    assert UserLimit.objects.get().max_gpus == 2


def test_the_schema_documents_the_per_user_limits(api, member):
    schema = api(member).get("/api/schema/?format=json").json()
    assert "/api/v1/projects/{name}/user-limits/" in schema["paths"]
    assert "/api/v1/projects/{name}/user-limits/{id}/" in schema["paths"]
    body = schema["components"]["schemas"]["UserLimitRequest"]["properties"]
    assert {"user", "max_gpus", "max_running", "max_pending", "max_interactive"} <= set(body)
    assert "user" not in schema["components"]["schemas"]["PatchedUserLimitRequest"]["properties"]
