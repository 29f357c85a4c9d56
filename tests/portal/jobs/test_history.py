"""History (issue 23): ended jobs stay listed under filters, paginated, in the API and the jobs
page, until the retention setting prunes them - never a pending or running job."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.jobs import retention
from portal.jobs.models import Job, JobEvent, JobRun, Status
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db
JOBS = "/api/v1/jobs/"


@pytest.fixture
def past(team_a, team_b, member, outsider):
    """team-a: 60 jobs of bob's that ended (20 each Succeeded, Failed, Stopped), 1 running and
    1 pending; team-b: 1 of eve's."""
    a, b, now = (
        Project.objects.get(name="team-a"),
        Project.objects.get(name="team-b"),
        timezone.now(),
    )
    ended = [Status.SUCCEEDED, Status.FAILED, Status.STOPPED]
    Job.objects.bulk_create(
        Job(project=a, name=f"old-{i}", gpus=1, user=member, status=ended[i % 3],
            started_at=now - timedelta(hours=2), finished_at=now - timedelta(hours=1))
        for i in range(60)
    )  # fmt: skip
    Job.objects.create(project=a, name="live", gpus=1, user=member, status=Status.RUNNING,
                       started_at=now, placement=[{"node": "dgx1-1", "devices": [0]}])  # fmt: skip
    Job.objects.create(project=a, name="waits", gpus=1, user=member)
    Job.objects.create(project=b, name="theirs", gpus=1, user=outsider, status=Status.FAILED)
    return a


def names(answer) -> set[str]:
    return {job["name"] for job in answer.json()["results"]}


def test_the_api_filters_history_by_status_user_and_time_and_pages_through_it(past, api, member):
    client = api(member)
    failed = client.get(JOBS, {"status": "Failed,TimedOut", "page_size": 5})
    assert failed.status_code == 200 and failed.json()["count"] == 20
    assert len(failed.json()["results"]) == 5 and failed.json()["next"]
    assert client.get(JOBS, {"user": "bob"}).json()["count"] == 62
    assert client.get(JOBS, {"user": "eve"}).json()["count"] == 0  # another team's: not visible
    today = timezone.localdate().isoformat()
    assert client.get(JOBS, {"since": today, "until": today}).json()["count"] == 62
    tomorrow = (timezone.localdate() + timedelta(days=1)).isoformat()
    assert client.get(JOBS, {"since": tomorrow}).json()["count"] == 0
    newest = client.get(JOBS, {"ordering": "-id", "page_size": 1}).json()["results"][0]
    assert newest["name"] == "waits"


@pytest.mark.parametrize(
    ("params", "field"),
    [({"status": "Running,Finished"}, "status"), ({"since": "yesterday"}, "since"),
     ({"until": "2026-13-01"}, "until"), ({"type": "batch"}, "type"),
     ({"ordering": "name"}, "ordering")],
)  # fmt: skip
def test_a_bad_filter_is_a_400_naming_it(past, api, member, params, field):
    answer = api(member).get(JOBS, params)
    assert answer.status_code == 400 and list(answer.json()) == [field], answer.json()


def test_the_jobs_page_counts_the_rows_and_pages_through_them(past, member):
    client = Client()
    client.force_login(member)
    first = client.get("/jobs/")
    assert first.status_code == 200
    text = first.content.decode()
    assert "62 jobs" in text and "Page 1 of 2" in text and 'rel="next"' in text
    second = client.get("/jobs/", {"page": 2}).content.decode()
    assert "Page 2 of 2" in second and second.count("<tr data-job=") == 12
    history = client.get("/jobs/", {"status": "Succeeded,Failed,TimedOut,Stopped"}).content
    assert b"60 jobs match these filters" in history and b"theirs" not in history
    bad = client.get("/jobs/", {"since": "soon"})
    assert bad.status_code == 400 and b"since: " in bad.content


def test_retention_deletes_only_jobs_that_ended_long_ago(past, settings):
    settings.ALLOT_JOB_RETENTION_DAYS = 90
    long_ago = timezone.now() - timedelta(days=91)
    old = Job.objects.filter(name__in=["old-0", "old-1", "old-2"])
    old.update(finished_at=long_ago)
    JobRun.objects.create(job=Job.objects.get(name="old-0"), number=1, started_at=long_ago, gpus=1,
                          ended_at=long_ago, end="completed")  # fmt: skip
    JobEvent.objects.create(time=long_ago, job=Job.objects.get(name="old-0"), project=past,
                            job_name="old-0", kind="succeeded")  # fmt: skip
    Job.objects.filter(name__in=["live", "waits"]).update(submitted_at=long_ago,
                                                          started_at=long_ago)  # fmt: skip
    assert retention.prune() == 3
    assert not Job.objects.filter(name__in=["old-0", "old-1", "old-2"]).exists()
    assert Job.objects.filter(name__in=["live", "waits", "old-3"]).count() == 3
    run = JobRun.objects.get()  # its run stays, for the GPU-hour accounting; its logs go
    assert (run.job, run.job_name, run.logs) == (None, "old-0", "")
    assert JobEvent.objects.get(job_name="old-0").job is None  # its events stay
    settings.ALLOT_JOB_RETENTION_DAYS = 0
    Job.objects.filter(name="old-3").update(finished_at=long_ago)
    assert retention.prune() == 0  # 0 keeps them for ever


def test_the_beat_schedule_prunes_the_history_hourly():
    from portal.celery import app
    from portal.jobs.tasks import PRUNE_TASK

    (entry,) = [e for e in app.conf.beat_schedule.values() if e["task"] == PRUNE_TASK]
    assert entry["schedule"] == 3600.0 and entry["options"]["expires"] < 3600.0
