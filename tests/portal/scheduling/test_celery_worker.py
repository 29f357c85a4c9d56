"""The cycle through a real Celery worker (and beat) on real Redis: submit -> worker -> Running."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis

from portal.jobs.models import JobEvent, Status
from tests.portal.scheduling.test_concurrency import _test_database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[3]
REDIS_URL = "redis://127.0.0.1:6379/14"  # a database of its own: the test flushes it


def start_worker(tmp_path: Path, name: str, *options: str) -> tuple[subprocess.Popen, object]:
    """A `celery worker` subprocess named `name` on Redis and the test database, logging to a
    file of its own; `options` add e.g. `-B` (beat)."""
    env = dict(
        os.environ, DATABASE_URL=_test_database_url(), REDIS_URL=REDIS_URL,
        ALLOT_SIM_START_DELAY_S="0", PYTHONPATH=str(ROOT),
    )  # fmt: skip
    log = open(tmp_path / f"{name}.log", "w+")  # noqa: SIM115 (closed by the fixture)
    worker = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "portal", "worker", "--pool=solo",
         "--hostname", f"{name}@%h", "--without-gossip", "--without-mingle", "--loglevel=INFO",
         *options],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    return worker, log


@pytest.fixture
def celery_workers(settings, tmp_path, request):
    """`celery_workers(n)` starts n worker processes (the first also runs beat) on Redis and the
    test database; this process plays web. Returns [(worker, log), ...]."""
    from portal.celery import app

    redis.Redis.from_url(REDIS_URL).flushdb()
    settings.REDIS_URL = REDIS_URL
    saved = app.conf.broker_url, app.conf.task_always_eager
    app.conf.broker_url, app.conf.task_always_eager = REDIS_URL, False
    started = []

    def start(count: int):
        beat = ("-B", "--schedule", str(tmp_path / "beat-schedule"))
        for index in range(count):
            started.append(start_worker(tmp_path, f"worker{index}", *(beat if index == 0 else ())))
        return started

    yield start
    for worker, log in started:
        worker.terminate()
        worker.wait(20)
        log.close()
    app.conf.broker_url, app.conf.task_always_eager = saved
    app.pool.force_close_all()


@pytest.fixture
def celery_worker(celery_workers):
    """One `celery worker -B` subprocess: (worker, log)."""
    return celery_workers(1)[0]


def wait_for(predicate, timeout: float = 40.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return False


def test_a_submitted_job_is_started_by_the_worker_and_seen_running(
    celery_worker, cluster, api, cluster_admin
):
    worker, log = celery_worker
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    response = api(cluster_admin).post(
        "/api/v1/jobs/", {"project": "team-a", "name": "via-worker", "gpus": 2}, format="json"
    )
    assert response.status_code == 201, response.content

    def running():
        return cluster.job("team-a", "via-worker").status == Status.RUNNING

    if not wait_for(running):
        log.seek(0)
        pytest.fail(f"the job never ran; worker log:\n{log.read()[-3000:]}")
    assert worker.poll() is None
    kinds = set(JobEvent.objects.filter(job_name="via-worker").values_list("kind", flat=True))
    assert {"submitted", "scheduled", "running"} <= kinds
    log.seek(0)
    assert "portal.scheduling.tasks.run_cycle" in log.read()


def ran_cycles(log) -> bool:
    log.seek(0)
    return "portal.scheduling.tasks.run_cycle" in log.read()


def replay_through_rest(live_server, cluster_admin, capsys, workers) -> None:
    """TR-4858 through REST while `workers` cycle on their own gives the in-memory replay's
    tables (the advisory lock keeps the cycle sources apart)."""
    from portal.tenancy.services import issue_token
    from scheduler_tools.replay import main as replay_in_memory
    from tests.paths import tr4858
    from tests.portal.scheduling.test_replay_script import load_script

    token = issue_token(cluster_admin, "test")[1]
    assert replay_in_memory([str(tr4858())]) == 0
    expected = capsys.readouterr().out
    # Replay only once every worker is cycling, so the cycle sources overlap (a worker starting
    # on a loaded machine can take longer than the whole replay).
    for _, log in workers:
        assert wait_for(lambda log=log: ran_cycles(log)), "a worker never ran a cycle"
    status = load_script().main([str(tr4858()), "--url", live_server.url, "--token", token])
    printed = capsys.readouterr()
    assert status == 0, printed.err + printed.out
    assert printed.out == expected
    assert all(worker.poll() is None for worker, _ in workers)


def test_tr4858_replayed_through_rest_with_the_worker_running_gives_the_reports_tables(
    celery_worker, live_server, cluster_admin, capsys
):
    """The production stack: Postgres, Redis, a Celery worker and beat cycling on their own while
    the REST replay submits and settles."""
    replay_through_rest(live_server, cluster_admin, capsys, [celery_worker])


def test_two_worker_processes_cycling_by_turns_give_the_same_tables_as_one(
    celery_workers, live_server, cluster_admin, capsys
):
    """Cycles alternate between two worker processes (and the web process's settle): whatever a
    cycle keeps between cycles (the row fingerprint, the overview's pacing, ETAs) lives where
    both see it, and each process's agent is rebuilt from the database, so the replay prints
    the same tables as with one worker."""
    workers = celery_workers(2)
    replay_through_rest(live_server, cluster_admin, capsys, workers)
