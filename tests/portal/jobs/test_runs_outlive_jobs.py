"""Issue 23: GPU-hour accounting adds up runs, so a run outlives its job: deleting a job (a
running one too) or pruning the history leaves the GPU-hours already billed where they were."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from portal.jobs import retention, services
from portal.jobs.models import Job, JobRun, RunEnd, Status
from portal.jobs.usage import gpu_hours_by_project

pytestmark = pytest.mark.django_db


def _billed(now):
    return gpu_hours_by_project(JobRun.objects.all(), now - timedelta(days=200), now, now)


def test_a_deleted_jobs_runs_still_count_and_a_running_one_ends(member, team_a):
    now = timezone.now()
    job = Job.objects.create(
        project=team_a,
        name="train-1",
        gpus=2,
        user=member,
        status=Status.RUNNING,
        started_at=now - timedelta(hours=3),
    )
    JobRun.objects.create(
        job=job,
        number=1,
        started_at=now - timedelta(hours=5),
        ended_at=now - timedelta(hours=4),
        gpus=2,
        end=RunEnd.EVICTED,
        logs="run 1 says hello",
    )
    JobRun.objects.create(
        job=job, number=2, started_at=now - timedelta(hours=3), gpus=2, logs="run 2 says hello"
    )

    services.delete_job(job, member)

    runs = list(JobRun.objects.order_by("number"))
    assert [(r.job_id, r.project_id, r.job_name, r.user_id, r.job_type) for r in runs] == [
        (None, team_a.id, "train-1", member.id, "train")
    ] * 2
    assert runs[1].end == RunEnd.STOPPED and runs[1].reason == "the job was deleted"
    assert runs[1].ended_by == member.username and runs[1].ended_at >= now
    assert [r.logs for r in runs] == ["", ""]  # the logs went with the job
    later = timezone.now() + timedelta(hours=1)
    assert _billed(later)["team-a"] == pytest.approx(2 * 1 + 2 * 3, abs=0.01)  # not growing


def test_pruned_history_keeps_its_gpu_hours(settings, member, team_a):
    settings.ALLOT_JOB_RETENTION_DAYS = 90
    now = timezone.now()
    long_ago = now - timedelta(days=120)
    job = Job.objects.create(
        project=team_a,
        name="old",
        gpus=1,
        user=member,
        status=Status.SUCCEEDED,
        finished_at=long_ago,
    )
    JobRun.objects.create(
        job=job,
        number=1,
        started_at=long_ago - timedelta(hours=10),
        ended_at=long_ago,
        gpus=1,
        end=RunEnd.COMPLETED,
        logs="done",
    )
    before = _billed(now)

    assert retention.prune(now) == 1

    assert not Job.objects.exists()
    assert _billed(now) == before == {"team-a": pytest.approx(10)}
    assert JobRun.objects.get().logs == ""


def test_the_accounting_api_counts_a_deleted_jobs_runs(api, cluster_admin, member, team_a):
    now = timezone.now()
    job = Job.objects.create(
        project=team_a,
        name="gone",
        gpus=1,
        user=member,
        status=Status.SUCCEEDED,
        finished_at=now - timedelta(hours=1),
    )
    JobRun.objects.create(
        job=job,
        number=1,
        started_at=now - timedelta(hours=3),
        ended_at=now - timedelta(hours=1),
        gpus=1,
        end=RunEnd.COMPLETED,
    )
    job.delete()
    answer = api(cluster_admin).get("/api/v1/accounting/", {"group_by": "user"})
    assert answer.status_code == 200, answer.content
    totals = {row["user"]: row["allocated_gpu_hours"] for row in answer.json()["totals"]}
    assert totals == {member.username: pytest.approx(2, abs=0.01)}
