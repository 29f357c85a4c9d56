"""Three personas (STYLE.md): the owner and the member see team-a's work, the outsider gets 404."""

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_a_job(api, cluster_admin, nodes, team_a):
    response = api(cluster_admin).post(
        "/api/v1/jobs/", {"project": "team-a", "name": "secret-run", "gpus": 1}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


PATHS = [
    "/api/v1/projects/team-a/",
    "/api/v1/projects/team-a/members/",
    "/api/v1/jobs/team-a/secret-run/",
    "/api/v1/jobs/team-a/secret-run/events/",
    "/api/v1/jobs/team-a/secret-run/logs/",
]


@pytest.mark.parametrize("path", PATHS)
def test_the_owner_and_the_member_read_team_a(api, owner, member, team_a_job, path):
    assert api(owner).get(path).status_code == 200
    assert api(member).get(path).status_code == 200


@pytest.mark.parametrize("path", PATHS)
def test_the_outsider_gets_404_for_everything_of_team_a(api, outsider, team_a_job, path):
    assert api(outsider).get(path).status_code == 404


def test_the_outsider_cannot_delete_or_submit_in_team_a(api, outsider, team_a_job):
    client = api(outsider)
    assert client.delete("/api/v1/jobs/team-a/secret-run/").status_code == 404
    response = client.post(
        "/api/v1/jobs/", {"project": "team-a", "name": "sneak", "gpus": 1}, format="json"
    )
    assert response.status_code == 404


def test_lists_never_show_the_outsider_team_a_names(api, outsider, team_a_job):
    client = api(outsider)
    jobs = client.get("/api/v1/jobs/").json()["results"]
    projects = client.get("/api/v1/projects/").json()["results"]
    assert "secret-run" not in {j["name"] for j in jobs}
    assert "team-a" not in {p["name"] for p in projects}
    assert "secret-run" not in str(client.get("/api/v1/overview/").json())


def test_a_viewer_reads_but_cannot_submit_or_delete(api, viewer, team_a_job):
    client = api(viewer)
    assert client.get("/api/v1/jobs/team-a/secret-run/").status_code == 200
    response = client.post(
        "/api/v1/jobs/", {"project": "team-a", "name": "v-run", "gpus": 1}, format="json"
    )
    assert response.status_code == 403
    assert client.delete("/api/v1/jobs/team-a/secret-run/").status_code == 403


def test_anonymous_requests_are_refused(api, team_a_job):
    assert api().get("/api/v1/jobs/").status_code in (401, 403)


def test_deleting_a_job_frees_it_and_keeps_its_events(api, owner, team_a_job):
    client = api(owner)  # a project admin: the job is the cluster admin's, not a researcher's
    assert client.delete("/api/v1/jobs/team-a/secret-run/").status_code in (200, 202, 204)
    assert client.get("/api/v1/jobs/team-a/secret-run/").status_code == 404
    from portal.jobs.models import JobEvent

    kinds = set(JobEvent.objects.filter(job_name="secret-run").values_list("kind", flat=True))
    assert {"submitted", "deleted"} <= kinds
    again = client.post(
        "/api/v1/jobs/", {"project": "team-a", "name": "secret-run", "gpus": 1}, format="json"
    )
    assert again.status_code == 201  # the name can be reused


def test_a_project_admin_adds_and_removes_members_and_a_researcher_may_not(
    api, owner, member, outsider, team_a_job
):
    client = api(owner)
    response = client.post(
        "/api/v1/projects/team-a/members/", {"username": "eve", "role": "viewer"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert response.json()["username"] == "eve" and response.json()["role"] == "viewer"
    names = {
        m["username"] for m in client.get("/api/v1/projects/team-a/members/").json()["results"]
    }
    assert {"alice", "bob", "eve"} <= names
    assert api(outsider).get("/api/v1/jobs/team-a/secret-run/").status_code == 200  # now a viewer
    assert client.delete("/api/v1/projects/team-a/members/eve/").status_code == 204
    assert api(outsider).get("/api/v1/jobs/team-a/secret-run/").status_code == 404
    bad = client.post("/api/v1/projects/team-a/members/", {"username": "nobody"}, format="json")
    assert bad.status_code == 404 and bad.json() == {"username": ["no user named 'nobody'"]}
    refused = api(member).post(
        "/api/v1/projects/team-a/members/", {"username": "eve"}, format="json"
    )
    assert refused.status_code == 403
