"""The commit is all or nothing, and a cycle that loses a race abandons itself cleanly."""

from __future__ import annotations

import threading

import pytest

from portal.jobs.models import HOLDING, Job, JobEvent, Status
from portal.scheduling import commit, cycle

pytestmark = pytest.mark.django_db(transaction=True)


def fill(cluster, jobs: int = 8):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    for i in range(jobs):
        cluster.submit("team-a", f"j-{i}", gpus=1)


def test_a_commit_failing_after_half_its_updates_leaves_no_job_half_started(cluster, monkeypatch):
    fill(cluster)
    monkeypatch.setattr(commit, "BATCH_SIZE", 2)  # 8 starts = 4 UPDATE statements
    real, calls = commit.conditional_update, []

    def fail_at_the_third(*args):
        calls.append(args)
        if len(calls) == 3:
            raise RuntimeError("worker killed mid-commit")
        real(*args)

    monkeypatch.setattr(commit, "conditional_update", fail_at_the_third)
    with pytest.raises(RuntimeError, match="worker killed"):
        cluster.cycle()
    assert len(calls) == 3  # two batches (4 jobs) were written before the failure ...
    assert Job.objects.filter(status__in=HOLDING).count() == 0  # ... and rolled back
    assert Job.objects.exclude(placement=[]).count() == 0
    assert not JobEvent.objects.filter(kind="scheduled").exists()
    assert cluster.agent.observe().jobs == {}  # the agent is told only after a commit
    monkeypatch.setattr(commit, "conditional_update", real)
    result = cluster.cycle()  # nothing to repair: the next cycle simply schedules
    assert len(result.decisions) == 8
    assert Job.objects.filter(status=Status.CONTAINER_CREATING).count() == 8


def test_a_job_deleted_while_the_cycle_plans_makes_it_abandon_and_the_next_one_succeed(
    cluster, monkeypatch
):
    fill(cluster, jobs=3)
    victim = cluster.job("team-a", "j-1")
    real_plan = cycle.plan_cycle

    def plan_then_lose_the_race(snapshot, policy):
        plan = real_plan(snapshot, policy)
        # Another connection deletes a job the plan is about to start (a user's DELETE).
        deleter = threading.Thread(target=lambda: Job.objects.filter(id=victim.id).delete())
        deleter.start()
        deleter.join()
        return plan

    monkeypatch.setattr(cycle, "plan_cycle", plan_then_lose_the_race)
    result = cluster.cycle()
    assert result.status == "conflict" and "someone else got there first" in result.message
    assert Job.objects.filter(status__in=HOLDING).count() == 0
    monkeypatch.setattr(cycle, "plan_cycle", real_plan)
    result = cluster.cycle()
    assert result.status == "done" and sorted(d.job[1] for d in result.decisions) == ["j-0", "j-2"]


KILLED_MID_COMMIT = """
import sys, time, django
django.setup()
from agents.simulated import SimulatedAgent
from portal.scheduling import commit, cycle
commit.BATCH_SIZE = 2
real, calls = commit.conditional_update, []
def hang_after_half(*args):
    real(*args)
    calls.append(args)
    if len(calls) == 2:
        print("half written", flush=True)
        time.sleep(600)
commit.conditional_update = hang_after_half
cycle.run_cycle(SimulatedAgent(), wait=True)
"""


def test_a_worker_killed_mid_commit_leaves_the_database_as_it_was(cluster):
    """SIGKILL after half the updates: Postgres rolls back and frees the lock; nothing to repair."""
    import os
    import subprocess
    import sys

    from tests.portal.scheduling.test_concurrency import ROOT, _test_database_url

    fill(cluster)
    env = dict(os.environ, DATABASE_URL=_test_database_url(), PYTHONPATH=str(ROOT))
    worker = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_COMMIT], cwd=ROOT, env=env, stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert worker.stdout.readline().strip() == "half written"
        assert Job.objects.filter(status__in=HOLDING).count() == 0  # uncommitted: invisible
    finally:
        worker.kill()
        worker.wait(10)
    assert Job.objects.filter(status__in=HOLDING).count() == 0
    result = cluster.cycle()  # the lock died with the worker's connection
    assert result.status == "done" and len(result.decisions) == 8
