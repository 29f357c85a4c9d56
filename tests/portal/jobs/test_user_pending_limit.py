"""A project's per-user limit on pending jobs bites at submission (issue 36, docs/user-fairness.md):
a 409 naming `pending` and the limit, nothing of a refused request stored; an override beats the
project default; resuming a stopped job counts as queueing it again."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job
from portal.tenancy.models import UserLimit

pytestmark = pytest.mark.django_db


def _sweep(prefix: str, count: int) -> dict:
    return {"jobs": [{"project": "team-a", "name": f"{prefix}-{i}", "gpus": 1}
                     for i in range(count)]}  # fmt: skip


def test_past_the_projects_per_user_pending_limit_a_submission_is_a_409_naming_it(
    api, member, team_a
):
    UserLimit.objects.create(project=team_a, max_pending=3)
    client = api(member)
    assert client.post("/api/v1/jobs/bulk/", _sweep("a", 2), format="json").status_code == 201
    refused = client.post("/api/v1/jobs/bulk/", _sweep("b", 2), format="json")
    assert refused.status_code == 409
    (reason,) = refused.json()["pending"]
    assert "bob has 2 pending jobs in team-a and asks for 2 more" in reason
    assert "at most 3 may wait per user in team-a" in reason and "max_pending" in reason
    assert Job.objects.count() == 2  # nothing of the refused sweep
    one = {"project": "team-a", "name": "c", "gpus": 1}
    assert client.post("/api/v1/jobs/", one, format="json").status_code == 201
    refused = client.post("/api/v1/jobs/", {**one, "name": "d"}, format="json")
    assert refused.status_code == 409 and "max_pending" in refused.json()["pending"][0]
    assert Job.objects.count() == 3


def test_a_users_override_raises_the_default_and_a_teammate_keeps_their_own_count(
    api, member, owner, team_a
):
    UserLimit.objects.create(project=team_a, max_pending=1)
    UserLimit.objects.create(project=team_a, user=member, max_pending=3, max_gpus=2)
    assert api(member).post("/api/v1/jobs/bulk/", _sweep("b", 3), format="json").status_code == 201
    one = {"project": "team-a", "name": "a-0", "gpus": 1}
    assert api(owner).post("/api/v1/jobs/", one, format="json").status_code == 201
    refused = api(owner).post("/api/v1/jobs/", {**one, "name": "a-1"}, format="json")
    assert "at most 1 may wait per user in team-a" in refused.json()["pending"][0]


def test_another_projects_pending_jobs_do_not_count(api, member, team_a, team_b):
    from portal.tenancy.models import Membership

    Membership.objects.create(user=member, project=team_b, role="researcher")
    UserLimit.objects.create(project=team_a, max_pending=1)
    other = {"project": "team-b", "name": "x", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", other, format="json").status_code == 201
    one = {"project": "team-a", "name": "a", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", one, format="json").status_code == 201


def test_resuming_a_stopped_job_past_the_limit_is_refused_and_it_stays_stopped(api, member, team_a):
    client = api(member)
    assert client.post("/api/v1/jobs/bulk/", _sweep("a", 2), format="json").status_code == 201
    assert client.post("/api/v1/jobs/team-a/a-0/stop/").status_code == 200
    UserLimit.objects.create(project=team_a, max_pending=1)
    refused = client.post("/api/v1/jobs/team-a/a-0/resume/")
    assert refused.status_code == 409 and "max_pending" in refused.json()["pending"][0]
    assert Job.objects.get(name="a-0").status == "Stopped"
    assert client.post("/api/v1/jobs/team-a/a-1/stop/").status_code == 200
    assert client.post("/api/v1/jobs/team-a/a-0/resume/").status_code == 200
