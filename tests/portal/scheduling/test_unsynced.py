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


def test_settle_waits_for_the_agent_to_sync_instead_of_spending_its_cycles(cluster, agent):
    """An agent that syncs after a few looks: settle() waits for it (unsynced looks are not
    cycles that count) and then starts the job, rather than running MAX_CYCLES cycles that
    decide nothing and reporting 'not settled'."""
    from portal.scheduling import settle as settle_module

    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    seen, looks = agent.observe, []

    def observe():
        looks.append(1)
        return dataclasses.replace(seen(), synced=len(looks) > 5)

    agent.observe = observe
    results, settled = settle_module.settle(agent, max_cycles=3)
    assert settled, [r.status for r in results]
    assert [r.status for r in results] == ["done"] * len(results)
    assert cluster.job("team-a", "a").status != Status.PENDING


def test_settle_gives_up_on_an_agent_that_never_syncs_within_its_wait(cluster, agent, monkeypatch):
    """A view that stays partial: settle() returns unsettled after the sync wait, with one
    unsynced result that says why, having decided nothing."""
    from portal.scheduling import settle as settle_module

    monkeypatch.setattr(settle_module, "SYNC_WAIT_S", 0.5)
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    seen = agent.observe
    agent.observe = lambda: dataclasses.replace(seen(), synced=False)
    results, settled = settle_module.settle(agent)
    assert not settled
    assert [r.status for r in results] == ["unsynced"]
    assert cluster.job("team-a", "a").status == Status.PENDING
