"""Pages and roles beyond the status table of tests/portal/access/test_tenancy_matrix.py: anonymous
visitors, names that must not leak, forms a role is not offered, the project admin's rights."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(api, cluster_admin, nodes, team_a, team_b, member, viewer, outsider):
    admin = api(cluster_admin)
    for body in ({"project": "team-a", "name": "secret-run", "gpus": 1},
                 {"project": "team-b", "name": "b-run", "gpus": 1}):  # fmt: skip
        assert admin.post("/api/v1/jobs/", body, format="json").status_code == 201
    return {"admin": cluster_admin, "researcher": member, "viewer": viewer, "outsider": outsider}


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize("path", ["/", "/jobs/", "/projects/", "/nodes/", "/analytics/"])
def test_anonymous_visitors_are_sent_to_sign_in(db, path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_outsider_never_sees_team_a_names_on_any_page(world):
    client = browser(world["outsider"])
    for path in ("/", "/jobs/", "/projects/", "/nodes/", "/jobs/new/", "/me/"):
        text = client.get(path).content.decode()
        assert "secret-run" not in text and "team-a" not in text, path


def test_a_viewer_is_not_offered_stop_or_member_forms(world):
    client = browser(world["viewer"])
    assert b"Stop" not in client.get("/jobs/team-a/secret-run/").content
    assert b"Add member" not in client.get("/projects/team-a/").content


def test_the_project_admin_edits_the_time_limit_but_not_the_quota(world, owner):
    client = browser(owner)
    page = client.get("/projects/team-a/edit/").content.decode()
    assert "interactive_time_limit_s" in page and 'name="quota"' not in page
    refused = client.post("/projects/team-a/edit/", {"interactive_time_limit_s": "3600",
                                                       "quota": "99"})  # fmt: skip
    assert refused.status_code == 403 and b"Only cluster admins change quota" in refused.content
    response = client.post("/projects/team-a/edit/", {"interactive_time_limit_s": "3600"})
    assert response.status_code == 302
    from portal.tenancy.models import Project

    project = Project.objects.get(name="team-a")
    assert (project.interactive_time_limit_s, float(project.quota)) == (3600, 4.0)


def test_the_api_lets_a_project_admin_patch_only_the_time_limit(world, owner, api):
    client = api(owner)
    ok = client.patch("/api/v1/projects/team-a/", {"interactive_time_limit_s": 60}, format="json")
    assert ok.status_code == 200, ok.content
    refused = client.patch("/api/v1/projects/team-a/", {"quota": 99}, format="json")
    assert refused.status_code == 403 and "quota" in refused.json()["detail"]
    assert client.delete("/api/v1/projects/team-a/").status_code == 403
