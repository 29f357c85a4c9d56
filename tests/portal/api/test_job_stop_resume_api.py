"""REST: POST .../stop/ keeps the job Stopped, POST .../resume/ queues it again, DELETE removes it
(as `runai delete`); a clash with the job's status is a 409 naming it."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job, Status

pytestmark = pytest.mark.django_db
JOB = "/api/v1/jobs/team-a/train-1/"


@pytest.fixture
def researcher(api, nodes, member):
    client = api(member)
    body = {"project": "team-a", "name": "train-1", "gpus": 1}
    assert client.post("/api/v1/jobs/", body, format="json").status_code == 201
    return client


def test_stop_then_resume_then_delete(researcher):
    stopped = researcher.post(f"{JOB}stop/")
    assert stopped.status_code == 200 and stopped.json()["status"] == "Stopped"
    assert researcher.get(JOB).json()["status"] == "Stopped"
    kinds = [e["kind"] for e in researcher.get(f"{JOB}events/").json()["results"]]
    assert kinds == ["submitted", "stopped"]
    resumed = researcher.post(f"{JOB}resume/")
    assert resumed.status_code == 200 and resumed.json()["status"] == "Pending"
    assert resumed.json()["queued_at"] is not None
    assert researcher.delete(JOB).status_code == 204
    assert researcher.get(JOB).status_code == 404


def test_a_status_clash_is_a_409_naming_the_status(researcher):
    again = researcher.post(f"{JOB}resume/")
    assert again.status_code == 409
    assert again.json() == {"status": ["job team-a/train-1 is Pending; only a Stopped job is "
                                       "resumed"]}  # fmt: skip
    Job.objects.filter(name="train-1").update(status=Status.SUCCEEDED)
    ended = researcher.post(f"{JOB}stop/")
    assert ended.status_code == 409 and "is Succeeded" in ended.json()["status"][0]


def test_a_viewer_may_not_stop_or_resume_and_an_outsider_sees_nothing(researcher, api, viewer,
                                                                       outsider):  # fmt: skip
    assert api(viewer).post(f"{JOB}stop/").status_code == 403
    assert api(viewer).post(f"{JOB}resume/").status_code == 403
    assert api(outsider).post(f"{JOB}stop/").status_code == 404
    assert api(outsider).post(f"{JOB}resume/").status_code == 404
    assert Job.objects.get(name="train-1").status == Status.PENDING
