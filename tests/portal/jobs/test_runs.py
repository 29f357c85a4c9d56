"""Runs (issue 23): every start of a job is a run with where, how long, how it ended and why,
its GPU-hours and its own logs; a job evicted by reclaim shows both runs, and its waiting time
restarts at the eviction."""

from __future__ import annotations

import threading

import pytest

from portal.jobs.models import JobRun, RunEnd, Status
from portal.jobs.services import resume_job, stop_job
from portal.scheduling import runs

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


class _ClusterLogs:
    """A real cluster's agent as `keep_logs` sees it: each read waits until `readers` reads
    are under way at once (a round trip each), then answers with the job's own line."""

    simulated = False

    def __init__(self, readers: int):
        self.arrived = threading.Barrier(readers, timeout=10)

    def logs(self, job, tail: int = 200) -> list[str]:
        self.arrived.wait()  # one read after another breaks the barrier at its timeout
        return [f"the log of {job.project}/{job.name}"]


def test_the_logs_of_a_clusters_ended_runs_are_read_at_once_and_each_kept_with_its_run(
    cluster, clock
):
    """Issue 39: a reclaim's victims' logs were read one round trip after another, minutes of
    the worker's cycle on the lab; they are read concurrently, each stored on its own run."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-b", 0)
    names = ["b-0", "b-1", "b-2"]
    for name in names:
        cluster.submit("team-b", name, 1, sim_duration_s=100_000)
    cluster.settle()
    for name in names:
        stop_job(cluster.job("team-b", name))  # the run ends; its logs are still to keep
    runs.keep_logs(_ClusterLogs(len(names)), [("team-b", name) for name in names])
    for name in names:
        (run,) = runs_of(cluster, "team-b", name)
        assert run.logs == f"the log of team-b/{name}" and run.logs_kept_at is not None
