"""Run cycles until the cluster settles: `POST /api/v1/scheduler/cycles/`.

Scenario replays and tests use it after each submission or deletion (FORMAT.md: "run the scheduler
until it makes no more decisions"). Each cycle applies the agent's transitions first, then plans;
the loop ends at the first cycle that decides nothing (R1.3).
"""

from __future__ import annotations

import time

from agents.base import Agent
from portal.scheduling.cycle import CycleResult, run_cycle
from scheduler import Decision

MAX_CYCLES = 100
# How long settle() waits for an unsynced agent (issue 40): a fresh agent lists the cluster in
# about a second, and the agent's back-off after an API-server outage is at most a minute; a
# REST call that waits longer than this answers "not settled" with the agent's reason.
SYNC_WAIT_S = 20.0


def decision_json(cycle: int, decision: Decision) -> dict:
    """A decision as the API returns it."""
    beneficiary = "/".join(decision.beneficiary) if decision.beneficiary else None
    return {
        "cycle": cycle,
        "kind": decision.kind,
        "project": decision.job[0],
        "job": decision.job[1],
        "action": decision.action,
        "reason": decision.reason,
        "nodes": list(dict.fromkeys(pod.node for pod in decision.placement)),
        "beneficiary": beneficiary,
    }


def settle(
    agent: Agent | None = None, max_cycles: int = MAX_CYCLES
) -> tuple[list[CycleResult], bool]:
    """Cycles (waiting for the lock) until one decides nothing; (results, settled).

    A cycle on an unsynced view decides nothing, so it neither counts as one of `max_cycles`
    nor as settled: settle() looks again, less and less often (50 ms doubling to 1 s), until
    the agent is synced or SYNC_WAIT_S have passed; then it returns unsettled with that last
    unsynced result, which says why. Without the wait, 100 unsynced cycles ran in a burst."""
    results: list[CycleResult] = []
    waiting_since, pause = None, 0.05
    while len(results) < max_cycles:
        result = run_cycle(agent, wait=True)
        if result.status == "unsynced":
            now = time.monotonic()
            waiting_since = now if waiting_since is None else waiting_since
            if now - waiting_since >= SYNC_WAIT_S:
                return [*results, result], False
            time.sleep(min(pause, SYNC_WAIT_S - (now - waiting_since)))
            pause = min(pause * 2, 1.0)
            continue
        waiting_since, pause = None, 0.05
        results.append(result)
        if result.status == "done" and not result.decisions:
            return results, True
    return results, False


def settle_response(agent: Agent | None = None, max_cycles: int = MAX_CYCLES) -> dict:
    """`{"cycles", "settled", "decisions", "transitions"}` for the cycles endpoint."""
    results, settled = settle(agent, max_cycles)
    decisions, transitions = [], []
    for number, result in enumerate(results, start=1):
        decisions += [decision_json(number, decision) for decision in result.decisions]
        transitions += [
            {"cycle": number, "project": change.job[0], "job": change.job[1],
             "status": change.new_status, "kind": change.kind, "message": change.message}
            for change in result.transitions
        ]  # fmt: skip
    return {
        "cycles": len(results),
        "settled": settled,
        "decisions": decisions,
        "transitions": transitions,
    }
