"""REST: a job's runs (GET .../runs/) and each run's own kept logs (GET .../logs/?run=N)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.jobs.models import Job, JobRun, RunEnd, Status

pytestmark = pytest.mark.django_db
JOB = "/api/v1/jobs/team-a/train-1/"


@pytest.fixture
def two_runs(api, nodes, member):
    client = api(member)
    body = {"project": "team-a", "name": "train-1", "gpus": 2}
    assert client.post("/api/v1/jobs/", body, format="json").status_code == 201
    job = Job.objects.get(name="train-1")
    Job.objects.filter(id=job.id).update(status=Status.STOPPED)
    start = timezone.now() - timedelta(hours=2)
    pod = [{"node": "dgx1-1", "devices": [0, 1], "share": 1.0}]
    JobRun.objects.create(job=job, number=1, started_at=start, placement=pod, gpus=2,
                          ended_at=start + timedelta(minutes=30), end=RunEnd.EVICTED,
                          ended_by="team-b's reclaim", reason="team-b reclaims its quota (R9.4)",
                          logs="epoch 1\nepoch 2")  # fmt: skip
    JobRun.objects.create(job=job, number=2, started_at=start + timedelta(hours=1), gpus=2,
                          placement=pod, ended_at=start + timedelta(hours=2),
                          end=RunEnd.STOPPED, ended_by="bob", logs="resumed\nepoch 3")  # fmt: skip
    return client


def test_the_runs_say_when_where_how_long_how_they_ended_and_their_gpu_hours(two_runs):
    runs = two_runs.get(f"{JOB}runs/").json()
    assert runs["count"] == 2
    first, second = runs["results"]
    assert (first["number"], first["end"], first["ended_by"]) == (1, "evicted",
                                                                  "team-b's reclaim")  # fmt: skip
    assert first["nodes"] == ["dgx1-1"] and first["duration_s"] == 1800.0
    assert first["gpu_hours"] == 1.0 and "R9.4" in first["reason"]
    assert (second["number"], second["end"], second["gpu_hours"]) == (2, "stopped", 2.0)


def test_each_run_has_its_own_logs_and_the_latest_is_the_default(two_runs):
    latest = two_runs.get(f"{JOB}logs/").json()
    assert (latest["run"], latest["lines"]) == (2, ["resumed", "epoch 3"])
    first = two_runs.get(f"{JOB}logs/?run=1&tail=1").json()
    assert (first["run"], first["lines"]) == (1, ["epoch 2"])
    missing = two_runs.get(f"{JOB}logs/?run=9")
    assert missing.status_code == 404 and missing.json() == {"run": ["job team-a/train-1 has no "
                                                                     "run 9"]}  # fmt: skip
    bad = two_runs.get(f"{JOB}logs/?run=first")
    assert bad.status_code == 400 and "run" in bad.json()


def test_an_outsider_sees_no_runs(two_runs, api, outsider):
    assert api(outsider).get(f"{JOB}runs/").status_code == 404
    assert api(outsider).get(f"{JOB}logs/?run=1").status_code == 404
