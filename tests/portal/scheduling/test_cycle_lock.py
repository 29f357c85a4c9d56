"""The cycle's lock covers database work only: the agent (the network) is called with no
transaction open and the cluster lock free, so submissions never wait on the cluster, and every
cycle reports how long it held the lock."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from agents.simulated import SimulatedAgent
from portal.jobs.models import Job, Status
from portal.scheduling import cycle_metrics
from portal.scheduling.cycle import LOCK_KEY, run_cycle

pytestmark = pytest.mark.django_db(transaction=True)
CALL_S = 0.2  # what one call to a real API server may cost under load


def lock_is_free() -> bool:
    """Ask from a connection of its own whether the cycle's advisory lock could be taken now."""
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"],
        password=settings["PASSWORD"] or None, dbname=settings["NAME"], autocommit=True,
    ) as probe:  # fmt: skip
        taken = probe.execute("SELECT pg_try_advisory_lock(%s)", [LOCK_KEY]).fetchone()[0]
        if taken:
            probe.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])
        return taken


class SlowAgent(SimulatedAgent):
    """The simulated agent, with every cluster call as slow as a loaded API server, noting
    whether the cycle held its transaction or its lock while it waited on the call."""

    def __init__(self, held: bool = False):
        super().__init__(start_delay_s=0)
        self.calls: list[tuple[str, bool, bool]] = []  # (call, in a transaction, lock free)
        self.in_call = threading.Event()
        # held: each call lasts until the test releases it (10 s at most), not CALL_S
        self.held, self.release, self.inside = held, threading.Event(), False

    def _call(self, name: str) -> None:
        self.calls.append((name, connection.in_atomic_block, lock_is_free()))
        self.release.clear()
        self.inside = True
        self.in_call.set()
        if self.held:
            self.release.wait(10)
        else:
            time.sleep(CALL_S)
        self.inside = False

    def observe(self):
        self._call("observe")
        return super().observe()

    def start(self, job):
        self._call("start")
        super().start(job)

    def stop(self, project, name):
        self._call("stop")
        super().stop(project, name)


def test_the_agent_is_called_with_no_transaction_open_and_the_lock_free(cluster):
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    agent = SlowAgent()
    assert run_cycle(agent, wait=True).status == "done"  # starts a
    cluster.delete("team-a", "a")
    run_cycle(agent, wait=True)  # stops a
    assert {call for call, _, _ in agent.calls} == {"observe", "start", "stop"}
    held = [(call, atomic, free) for call, atomic, free in agent.calls if atomic or not free]
    assert held == []


def test_a_submission_during_a_cycle_returns_at_once(cluster, api, cluster_admin):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    for index in range(3):
        cluster.submit("team-a", f"job-{index}", gpus=1)
    warm_up = {"project": "team-a", "name": "job-3", "gpus": 1}  # the first request loads code
    assert api(cluster_admin).post("/api/v1/jobs/", warm_up, format="json").status_code == 201
    # Each of the agent's calls lasts until the submission made during it has returned: a
    # submission that waited on the cycle would return only after the call gave up (10 s), and
    # find the agent no longer inside it. No clock decides (a timed bound failed under load).
    agent = SlowAgent(held=True)
    worker = threading.Thread(target=lambda: (run_cycle(agent, wait=True), connection.close()))
    worker.start()
    answered_during_call = []
    try:
        for index in range(5):  # while the cycle observes, then starts its four jobs
            assert agent.in_call.wait(15)
            body = {"project": "team-a", "name": f"late-{index}", "gpus": 1}
            response = api(cluster_admin).post("/api/v1/jobs/", body, format="json")
            answered_during_call.append(agent.inside)
            assert response.status_code == 201, response.content
            agent.in_call.clear()
            agent.release.set()
    finally:
        agent.release.set()
        worker.join(30)
    assert answered_during_call == [True] * 5
    started = set(
        Job.objects.filter(status=Status.CONTAINER_CREATING).values_list("name", flat=True)
    )
    assert started == {"job-0", "job-1", "job-2", "job-3", "late-0"}  # late-0 came in while the
    # cycle observed the cluster, before its snapshot: the rows are read under the lock


def test_each_cycle_reports_how_long_it_held_the_lock(cluster, api, cluster_admin):
    from django.core.cache import cache

    cache.delete(cycle_metrics.KEY)
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    run_cycle(SlowAgent(), wait=True)
    response = api(cluster_admin).get("/api/v1/scheduler/cycles/")
    assert response.status_code == 200
    body = response.json()
    last = body["last"]
    assert body["cycles"] == 1 and body["statuses"] == {"done": 1}
    assert last["observe_s"] >= CALL_S  # one look at the cluster
    assert last["carry_out_s"] >= CALL_S  # the start, after the commit
    assert 0 < last["lock_s"] < CALL_S  # the lock covered database work only
    assert last["lock_s"] >= last["plan_s"]
    assert body["stages"]["lock_s"]["max_s"] == last["lock_s"]


def test_only_cluster_admins_read_the_cycle_metrics(api, owner):
    assert api(owner).get("/api/v1/scheduler/cycles/").status_code == 403
