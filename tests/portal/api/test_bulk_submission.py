"""`POST /api/v1/jobs/bulk/`: a sweep in one request, all jobs stored or none."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.api.serializers.jobs import BULK_MAX, ZERO_GPUS
from portal.cluster.models import Node
from portal.jobs.models import Job, JobEvent, Status
from portal.tenancy.models import Membership, Project, UserLimit
from tests.conftest import _user

URL = "/api/v1/jobs/bulk/"


@pytest.fixture
def node(db):
    return Node.objects.create(name="dgx1-1", gpus=8)


def sweep(count: int, project: str = "team-a", **fields) -> dict:
    return {"jobs": [{"project": project, "name": f"lr-{i}", "gpus": 1, **fields}
                     for i in range(count)]}  # fmt: skip


def test_a_sweep_is_stored_pending_with_one_submitted_event_each(api, member, node):
    response = api(member).post(URL, sweep(50, image="python:3.11"), format="json")
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["created"] == 50
    assert body["jobs"][0] == {"project": "team-a", "name": "lr-0", "status": "Pending"}
    jobs = Job.objects.filter(project__name="team-a")
    assert jobs.count() == 50 and set(jobs.values_list("status", flat=True)) == {Status.PENDING}
    assert set(jobs.values_list("user__username", flat=True)) == {member.username}
    events = JobEvent.objects.filter(kind="submitted", job_name__startswith="lr-")
    assert events.count() == 50
    assert events.first().message == f"submitted by {member.username}: 1 GPU, train"


def test_a_sweep_costs_a_few_statements_not_a_few_per_job(api, member, node):
    client = api(member)
    with CaptureQueriesContext(connection) as small:
        assert client.post(URL, sweep(2), format="json").status_code == 201
    Job.objects.all().delete()
    with CaptureQueriesContext(connection) as large:
        assert client.post(URL, sweep(200), format="json").status_code == 201
    assert len(large.captured_queries) == len(small.captured_queries)


def spread(count: int, projects: int) -> dict:
    return {"jobs": [{"project": f"sweep-{i % projects:02d}", "name": f"lr-{i}", "gpus": 1}
                     for i in range(count)]}  # fmt: skip


@pytest.mark.parametrize("persona", ["researcher", "cluster admin"])
def test_a_sweep_over_many_projects_costs_what_one_over_two_does(api, node, persona):
    """Issue 39: `make bench-portal --bulk 100` sends each request jobs of 100 projects; their
    checks read each project, its right to submit, its limits and caps once per project."""
    user = _user("sweeper", staff=persona == "cluster admin")
    for i in range(20):
        project = Project.objects.create(name=f"sweep-{i:02d}", quota=1)
        UserLimit.objects.create(project=project, max_pending=50)
        if persona == "researcher":
            Membership.objects.create(user=user, project=project, role="researcher")
    client = api(user)
    with CaptureQueriesContext(connection) as two:
        assert client.post(URL, spread(2, 2), format="json").status_code == 201
    Job.objects.all().delete()
    with CaptureQueriesContext(connection) as twenty:
        answer = client.post(URL, spread(40, 20), format="json")
    assert answer.status_code == 201, answer.content
    assert len(twenty.captured_queries) == len(two.captured_queries)


def test_a_sweep_naming_a_project_one_may_not_submit_in_is_refused_as_a_single_job_is(
    api, member, node, team_b
):
    Membership.objects.create(user=member, project=team_b, role="viewer")
    body = {"jobs": [{"project": "team-a", "name": "ok", "gpus": 1},
                     {"project": "team-b", "name": "no", "gpus": 1}]}  # fmt: skip
    answer = api(member).post(URL, body, format="json")
    single = api(member).post("/api/v1/jobs/", body["jobs"][1], format="json")
    assert answer.status_code == single.status_code == 403
    assert answer.json() == single.json()
    body["jobs"][1]["project"] = "nowhere"
    answer = api(member).post(URL, body, format="json")
    assert answer.status_code == 404 and "'nowhere' not found" in str(answer.json())
    assert not Job.objects.exists()


@pytest.mark.parametrize("project", [{}, [], None, 7])
def test_a_sweep_whose_project_is_not_a_name_is_a_400(api, member, node, project):
    body = {"jobs": [{"project": "team-a", "name": "ok", "gpus": 1},
                     {"project": project, "name": "no", "gpus": 1}]}  # fmt: skip
    answer = api(member).post(URL, body, format="json")
    assert answer.status_code == 400, answer.content
    assert "project" in answer.json()["jobs"]["1"]


def test_one_bad_job_rejects_the_whole_sweep_and_names_it(api, member, node):
    body = sweep(3)
    body["jobs"][1]["gpus"] = -1
    response = api(member).post(URL, body, format="json")
    assert response.status_code == 400
    assert response.json()["jobs"] == {"1": {"gpus": [ZERO_GPUS]}}
    assert not Job.objects.exists()


def test_a_name_twice_in_the_sweep_is_a_400(api, member, node):
    body = sweep(2)
    body["jobs"][1]["name"] = "lr-0"
    response = api(member).post(URL, body, format="json")
    assert response.status_code == 400
    assert "appears twice" in response.json()["jobs"][0]
    assert not Job.objects.exists()


def test_a_name_already_taken_is_a_409_and_nothing_is_stored(api, member, node):
    client = api(member)
    assert client.post("/api/v1/jobs/", sweep(1)["jobs"][0], format="json").status_code == 201
    response = client.post(URL, sweep(3), format="json")
    assert response.status_code == 409
    assert "'lr-0' already exists in team-a" in response.json()["jobs"][0]
    assert Job.objects.count() == 1


def test_an_empty_or_oversized_sweep_is_a_400(api, member, node):
    client = api(member)
    assert "jobs" in client.post(URL, {"jobs": []}, format="json").json()
    response = client.post(URL, sweep(BULK_MAX + 1), format="json")
    assert response.status_code == 400
    assert f"no more than {BULK_MAX}" in str(response.json()["jobs"])


def test_a_project_the_user_may_not_see_is_a_404_and_a_viewers_a_403(api, outsider, viewer, node):
    assert api(outsider).post(URL, sweep(2), format="json").status_code == 404
    assert api(viewer).post(URL, sweep(2), format="json").status_code == 403
    assert not Job.objects.exists()
