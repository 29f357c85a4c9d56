"""Every page with four personas: the site admin, a researcher and a viewer of team-a, and an
outsider (a researcher of team-b). Pages ask the same access helpers as the API: a project or job
the user may not see is a 404, an action their role does not allow is a 403."""

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


READ = {  # path -> status for admin, researcher, viewer, outsider
    "/": (200, 200, 200, 200),
    "/analytics/": (200, 200, 200, 200),
    "/me/": (200, 200, 200, 200),
    "/jobs/": (200, 200, 200, 200),
    "/jobs/new/": (200, 200, 200, 200),
    "/jupyter/new/": (200, 200, 200, 200),
    "/projects/": (200, 200, 200, 200),
    "/nodes/": (200, 200, 200, 200),
    "/users/": (200, 403, 403, 403),
    "/projects/new/": (200, 403, 403, 403),
    "/projects/team-a/": (200, 200, 200, 404),
    "/projects/team-a/edit/": (200, 403, 403, 404),
    "/jobs/team-a/secret-run/": (200, 200, 200, 404),
}
PERSONAS = ("admin", "researcher", "viewer", "outsider")


@pytest.mark.parametrize("path", READ)
def test_each_persona_gets_the_right_answer_for_each_page(world, path):
    got = tuple(browser(world[p]).get(path).status_code for p in PERSONAS)
    assert got == READ[path]


@pytest.mark.parametrize("path", ["/", "/jobs/", "/projects/", "/nodes/", "/analytics/"])
def test_anonymous_visitors_are_sent_to_sign_in(db, path):
    response = Client().get(path)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_outsider_never_sees_team_a_names_on_any_page(world):
    client = browser(world["outsider"])
    for path in ("/", "/jobs/", "/projects/", "/nodes/", "/jobs/new/", "/me/"):
        text = client.get(path).content.decode()
        assert "secret-run" not in text and "team-a" not in text, path


WRITE = [  # (path, form, statuses for admin, researcher, viewer, outsider)
    ("/jobs/team-a/secret-run/stop/", {}, (302, 302, 403, 404)),
    ("/projects/team-a/members/", {"username": "eve", "role": "viewer"}, (302, 403, 403, 404)),
    ("/projects/team-a/delete/", {}, (302, 403, 403, 404)),
    ("/nodes/dgx1-2/", {"action": "cordon"}, (302, 403, 403, 403)),
    ("/users/", {"username": "x"}, (200, 403, 403, 403)),
]


@pytest.mark.parametrize(("path", "form", "expected"), WRITE)
@pytest.mark.parametrize("index", range(4))
def test_each_persona_may_or_may_not_change_things(world, path, form, expected, index):
    response = browser(world[PERSONAS[index]]).post(path, form)
    assert response.status_code == expected[index]


def test_a_viewer_is_not_offered_stop_or_member_forms(world):
    client = browser(world["viewer"])
    assert b"Stop" not in client.get("/jobs/team-a/secret-run/").content
    assert b"Add member" not in client.get("/projects/team-a/").content


def test_the_project_admin_edits_the_time_limit_but_not_the_quota(world, owner):
    client = browser(owner)
    page = client.get("/projects/team-a/edit/").content.decode()
    assert "interactive_time_limit_s" in page and 'name="quota"' not in page
    response = client.post("/projects/team-a/edit/", {"interactive_time_limit_s": "3600",
                                                        "quota": "99"})  # fmt: skip
    assert response.status_code == 302
    world["admin"].refresh_from_db()
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
