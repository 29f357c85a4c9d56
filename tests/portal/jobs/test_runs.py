"""Runs (issue 23): every start of a job is a run with where, how long, how it ended and why,
its GPU-hours and its own logs; a job evicted by reclaim shows both runs, and its waiting time
restarts at the eviction."""

from __future__ import annotations

import pytest

from portal.jobs.models import JobRun, RunEnd, Status
from portal.jobs.services import resume_job, stop_job

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def borrowed(cluster, clock):
    """One 8-GPU node; team-b (quota 0) borrows all of it with `b-big` for 5 minutes."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.project("team-b", 0)
    cluster.submit("team-b", "b-big", 8, sim_duration_s=100_000)
    cluster.settle()
    clock.advance(300)
    cluster.settle()
    assert cluster.job("team-b", "b-big").status == Status.RUNNING
    return cluster


def runs_of(cluster, project: str, name: str) -> list[JobRun]:
    return list(JobRun.objects.filter(job=cluster.job(project, name)).order_by("number"))


def test_a_job_evicted_by_reclaim_shows_both_runs_with_their_logs_and_end(borrowed, clock):
    started = runs_of(borrowed, "team-b", "b-big")[0].started_at
    borrowed.submit("team-a", "a-need", 8, sim_duration_s=60)
    borrowed.settle()  # team-a reclaims its quota: b-big is evicted and waits
    evicted_at = clock()
    job = borrowed.job("team-b", "b-big")
    assert job.status == Status.PENDING
    assert job.queued_at == evicted_at  # its wait restarts at the eviction
    first = runs_of(borrowed, "team-b", "b-big")[0]
    assert (first.number, first.end, first.ended_by) == (1, RunEnd.EVICTED, "team-a's reclaim")
    assert first.reason and first.ended_at == evicted_at and first.started_at == started
    assert first.gpu_hours(clock()) == pytest.approx(8 * 300 / 3600)
    assert first.logs_kept_at is not None and "started on dgx1-1" in first.logs
    assert first.logs.count("\n") >= 25  # 300 s of a training job's lines

    clock.advance(90)  # a-need completes; b-big starts again as run 2
    borrowed.settle()
    borrowed.settle()
    job = borrowed.job("team-b", "b-big")
    assert job.status in (Status.CONTAINER_CREATING, Status.RUNNING)
    assert (job.started_at - job.queued_at).total_seconds() == pytest.approx(90, abs=1)
    first, second = runs_of(borrowed, "team-b", "b-big")
    assert second.number == 2 and second.end == "" and second.ended_at is None
    assert second.started_at == job.started_at and second.logs == ""
    done = runs_of(borrowed, "team-a", "a-need")[0]
    assert (done.end, done.reason) == (RunEnd.COMPLETED, "completed successfully")
    assert "finished" in done.logs or done.logs  # its own logs, kept before its pods went


def test_a_stop_ends_the_run_and_a_resume_starts_run_2(borrowed, clock, agent):
    stop_job(borrowed.job("team-b", "b-big"))
    first = runs_of(borrowed, "team-b", "b-big")[0]
    assert (first.end, first.ended_by) == (RunEnd.STOPPED, "the system")
    borrowed.settle()  # the cycle keeps its logs, then stops its pods
    first.refresh_from_db()
    assert "started on dgx1-1" in first.logs
    assert ("team-b", "b-big") not in agent.observe().jobs
    resume_job(borrowed.job("team-b", "b-big"))
    borrowed.settle()
    numbers = [(run.number, run.end) for run in runs_of(borrowed, "team-b", "b-big")]
    assert numbers == [(1, RunEnd.STOPPED), (2, "")]
