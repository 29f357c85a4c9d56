"""A cycle on an agent's partial view decides nothing (issue 40): pods the agent does not see
may still hold GPUs, so nothing is started, stopped or moved, and the cycle's record says so."""

from __future__ import annotations

import dataclasses

import pytest

from portal.jobs.models import Status
from portal.scheduling import cycle_metrics
from portal.scheduling.cycle import run_cycle

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_cycle_on_an_unsynced_view_decides_and_carries_out_nothing(cluster, agent):
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    seen = agent.observe
    agent.observe = lambda: dataclasses.replace(seen(), synced=False)
    result = run_cycle(agent, wait=True)
    assert result.status == "unsynced" and not result.decisions
    assert cluster.job("team-a", "a").status == Status.PENDING
    assert ("team-a", "a") not in agent.observe().jobs
    assert cycle_metrics.summary()["last"]["status"] == "unsynced"
    agent.observe = seen  # synced again: the job starts
    assert run_cycle(agent, wait=True).status == "done"
    assert cluster.job("team-a", "a").status != Status.PENDING
