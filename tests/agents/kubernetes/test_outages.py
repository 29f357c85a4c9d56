"""The Kubernetes agent through an outage of the API server (issue 40): the requests in flight
when it goes away fail together, and together they are one failure, not one each - the agent
backs off once per outage, so work resumes within a second or two of the server answering. And a
fresh agent (a restarted worker) carries out a move of a job another process started."""

from __future__ import annotations

import dataclasses
import threading
import time

from agents.base import PodSpec
from agents.kubernetes import agent as agent_module
from tests.agents.kubernetes.conftest import make_agent
from tests.agents.kubernetes.test_agent import NS, job


def test_requests_failing_together_back_off_once(cluster, clock, monkeypatch):
    agent = make_agent(cluster, clock, concurrency=16)
    in_flight = threading.Barrier(16, timeout=10)
    start_job = agent_module.pods.start_job
    outage = {"on": True}

    def refused(*args, **kwargs):
        if not outage["on"]:
            return start_job(*args, **kwargs)
        in_flight.wait()  # all 16 requests are on the wire when the server goes
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(agent_module.pods, "start_job", refused)
    try:
        agent.carry_out((), [job(f"j{i}") for i in range(16)])
        assert "retrying in 1 s" in agent.problem, agent.problem  # not 2 ** 15 capped at 60
        outage["on"] = False  # the server answers again
        clock.now += 1
        agent.observe()
        assert all((NS, f"j{i}-0") in cluster.pods for i in range(16))
        assert agent.problem == ""
    finally:
        agent.close()


def test_an_outage_that_lasts_still_waits_longer_each_attempt(cluster, clock, monkeypatch):
    agent = make_agent(cluster, clock, concurrency=4)

    def refused(*args, **kwargs):
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(agent_module.pods, "start_job", refused)
    try:
        agent.carry_out((), [job(f"j{i}") for i in range(4)])
        assert "retrying in 1 s" in agent.problem
        clock.now += 1
        agent.carry_out((), ())
        assert "retrying in 2 s" in agent.problem  # a new attempt failed: a longer wait
        clock.now += 2
        agent.carry_out((), ())
        assert "retrying in 4 s" in agent.problem
    finally:
        agent.close()


def test_a_fresh_agent_carries_out_a_move_of_a_job_it_did_not_start(cluster, clock):
    """Issue 40 defect 1: the job's pod is there, bound to its old node; the new process's
    start used to take the 409 as done, and the portal gave the old GPU to another job."""
    first = make_agent(cluster, clock)
    first.start(job(devices=(0,)))
    first.close()  # the worker that started it dies
    assert cluster.pods[(NS, "train-0")]["spec"]["nodeName"] == "dgx1-1"
    fresh = make_agent(cluster, clock)
    moved = dataclasses.replace(job(), placement=(PodSpec("dgx1-2", (3,), 1.0),))
    try:
        fresh.start(moved)
        assert (NS, "train-0") in cluster.deleted  # the old pod went, not taken as the start
        clock.now += 1
        fresh.observe()
        made = cluster.pods[(NS, "train-0")]
        assert made["spec"]["nodeName"] == "dgx1-2"
        assert made["metadata"]["annotations"]["allot.io/devices"] == "3"
    finally:
        fresh.close()


def test_the_observation_says_whether_it_is_synced(agent, cluster, clock):
    """Issue 40 defect 2: a view before the watch has listed, or while the server is away, may
    leave out pods that hold GPUs; the agent says so."""
    agent.start(job())
    assert agent.watcher.wait_for(cluster.rv)
    assert agent.observe().synced
    cluster.go_down()
    assert not agent.observe().synced  # backing off: jobs as last seen, not the cluster
    cluster.come_up()
    clock.now += 1
    deadline = time.monotonic() + 10
    while not agent.observe().synced:  # the watch, woken, lists again
        assert time.monotonic() < deadline, agent.observe().problem
        time.sleep(0.05)
