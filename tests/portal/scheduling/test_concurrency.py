"""Concurrency: racing cycles never double-place a device; concurrent submissions are all kept."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection

from portal.jobs.models import HOLDING, Job, JobEvent, Status
from portal.scheduling.cycle import run_cycle
from tests.portal.scheduling.conftest import device_use

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[3]

CYCLE_RUNNER = """
import os, sys, django
django.setup()
from agents.simulated import SimulatedAgent
from portal.scheduling.cycle import run_cycle
agent = SimulatedAgent()
print(" ".join(run_cycle(agent, wait=True).status for _ in range(int(sys.argv[1]))))
"""


def in_threads(*targets) -> None:
    """Run each callable in its own thread (own DB connection, closed at the end); re-raise."""
    errors = []

    def wrap(target):
        try:
            target()
        except Exception as exc:  # surfaced below, in the test's thread
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=wrap, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors


def assert_no_device_overcommitted() -> None:
    overcommitted = {device: share for device, share in device_use().items() if share > 1.0}
    assert overcommitted == {}


def shapes(count: int):
    """A mix of whole, multi-GPU and fractional jobs that cannot all fit on 16 GPUs."""
    sizes = [1, 2, 0.5, 0.3, 4, 0.2, 1, 3]
    return [(f"job-{i}", sizes[i % len(sizes)]) for i in range(count)]


def test_two_cycles_racing_in_threads_never_double_place_a_device(cluster):
    cluster.node("n1", 8)
    cluster.node("n2", 8)
    cluster.project("team-a", 8)
    cluster.project("team-b", 8)

    def submitter():
        for i, (name, gpus) in enumerate(shapes(40)):
            cluster.submit("team-a" if i % 2 else "team-b", name, gpus)

    def cycles():
        for _ in range(25):
            run_cycle(cluster.agent, wait=True)
            assert_no_device_overcommitted()

    in_threads(submitter, cycles, cycles)
    cluster.settle()
    assert_no_device_overcommitted()
    assert Job.objects.filter(status__in=HOLDING).count() > 10


def test_two_cycles_racing_in_separate_processes_never_double_place_a_device(cluster):
    """Two processes share nothing but Postgres: the advisory lock alone keeps them apart."""
    cluster.node("n1", 8)
    cluster.node("n2", 8)
    cluster.project("team-a", 16)
    env = dict(os.environ, DATABASE_URL=_test_database_url(), ALLOT_EMBEDDED_CYCLE="0")
    env["PYTHONPATH"] = str(ROOT)
    runners = [
        subprocess.Popen(
            [sys.executable, "-c", CYCLE_RUNNER, "40"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for name, gpus in shapes(60):
        cluster.submit("team-a", name, gpus)
    outputs = [runner.communicate(timeout=120) for runner in runners]
    assert all(runner.returncode == 0 for runner in runners), outputs
    assert all(set(out.split()) <= {"done", "conflict"} for out, _ in outputs), outputs
    assert_no_device_overcommitted()
    cluster.settle()
    assert_no_device_overcommitted()


class NoLock:
    """Stands in for the process lock, so that only Postgres' advisory lock separates cycles."""

    def acquire(self, blocking=True):
        return True

    def release(self):
        pass


def test_a_cycle_started_while_another_is_committing_waits_for_it(cluster, monkeypatch):
    """The race that conditional updates alone miss, made deterministic.

    Cycle A plans `low/job1` onto the only GPU and pauses before committing. Meanwhile an
    interactive job of a project with quota arrives and cycle B runs. Without the cluster lock B
    would read the GPU as idle, put `high/job2` on it and leave job1 pending (its pending reason
    is the only row it touches), both commits would match their expected statuses, and the
    device would be held twice. With the lock B waits for A's commit and plans from there.
    """
    from portal.scheduling import cycle

    monkeypatch.setattr(cycle, "_process_lock", NoLock())  # two threads = two processes here
    cluster.node("n1", 1)
    cluster.project("low", 0)
    cluster.project("high", 1)
    cluster.submit("low", "job1", 1)
    planned, resume = threading.Event(), threading.Event()
    real_plan = cycle.plan_cycle

    def plan_and_pause(snapshot, policy):
        plan = real_plan(snapshot, policy)
        if threading.current_thread().name == "cycle-a":
            planned.set()
            resume.wait(10)
        return plan

    monkeypatch.setattr(cycle, "plan_cycle", plan_and_pause)

    def cycle_b():
        planned.wait(10)
        cluster.submit("high", "job2", 1, type="interactive")
        run_cycle(cluster.agent, wait=True)

    def cycle_a():
        threading.current_thread().name = "cycle-a"
        run_cycle(cluster.agent, wait=True)

    def release_a_later():
        planned.wait(10)
        threading.Event().wait(1.0)  # B has had a full second to run (or to wait for the lock)
        resume.set()

    in_threads(cycle_a, cycle_b, release_a_later)
    assert_no_device_overcommitted()
    cluster.settle()
    assert_no_device_overcommitted()
    assert cluster.job("high", "job2").status in HOLDING


def test_twenty_concurrent_submissions_are_all_stored_once_and_interactive_stays_in_quota(
    cluster, api, cluster_admin
):
    cluster.node("n1", 8)
    cluster.node("n2", 8)
    cluster.project("team-a", 4)
    clients = [api(cluster_admin) for _ in range(20)]
    codes, interactive_peaks, done = [], [], threading.Event()

    def submit(i):
        body = {"project": "team-a", "name": f"nb-{i}", "gpus": 1, "type": "interactive"}
        codes.append(clients[i].post("/api/v1/jobs/", body, format="json").status_code)

    def cycles():
        while not done.is_set():
            run_cycle(cluster.agent, wait=True)
            interactive_peaks.append(cluster.allocated().get("team-a", 0.0))

    cycler = threading.Thread(target=lambda: (cycles(), connection.close()))
    cycler.start()
    in_threads(*[lambda i=i: submit(i) for i in range(20)])
    done.set()
    cycler.join(60)
    cluster.settle()
    names = list(Job.objects.filter(project__name="team-a").values_list("name", flat=True))
    assert sorted(codes) == [201] * 20
    assert sorted(names) == sorted(f"nb-{i}" for i in range(20))
    assert JobEvent.objects.filter(kind="submitted").count() == 20
    assert max([*interactive_peaks, 0]) <= 4  # R3.2: interactive jobs only within quota
    assert cluster.allocated() == {"team-a": 4.0}
    assert Job.objects.filter(status=Status.PENDING).count() == 16


def _test_database_url() -> str:
    settings = connection.settings_dict
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    return f"postgres://{settings['USER']}@{host}:{port}/{settings['NAME']}"
