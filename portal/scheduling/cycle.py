"""One scheduling cycle: lock, snapshot, plan, commit, then tell the agent and the browsers.

    lock -> load rows -> reconcile the agent -> observe transitions -> plan_cycle -> commit
    (one transaction) -> agent.start/stop -> publish the overview

The lock is cluster-wide: a Postgres transaction-level advisory lock (released by the commit or
by the death of the connection, so a worker killed mid-cycle leaves the database exactly as it
was), plus a process lock that also serialises cycles on SQLite and keeps the agent calls of one
cycle together. The agent is told only after the commit; if that never happens (a crash), the
next cycle's reconciliation catches up from the database.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Literal

from django.db import connection, transaction

from agents.base import Agent
from portal.cluster import metrics
from portal.cluster.sync import sync_nodes
from portal.jobs.models import HOLDING, Job
from portal.scheduling import eta, observe, snapshot
from portal.scheduling.agent import SPEC_FIELDS, get_agent, spec_from_values
from portal.scheduling.commit import CommitConflict, commit_cycle
from portal.scheduling.observe import Transition
from portal.scheduling.publish import publish_overview
from scheduler import Decision, Policy, plan_cycle

logger = logging.getLogger(__name__)

LOCK_KEY = 0x416C6C6F74  # "Allot": the advisory-lock id of the scheduling cycle
_process_lock = threading.Lock()


@dataclass(frozen=True)
class CycleResult:
    """What one cycle did. `status`: done, busy (another cycle holds the lock) or conflict."""

    status: Literal["done", "busy", "conflict"]
    decisions: tuple[Decision, ...] = ()
    transitions: tuple[Transition, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    message: str = ""
    started_ids: tuple[int, ...] = ()
    fingerprint: int = 0  # of the job rows the cycle read: a submission or deletion changes it

    @property
    def changed(self) -> bool:
        """True when the cycle wrote anything a viewer would see."""
        return bool(self.decisions or self.transitions)


def run_cycle(
    agent: Agent | None = None, *, wait: bool = False, policy: Policy | None = None
) -> CycleResult:
    """Run one cycle. With `wait=False` a cycle already running elsewhere makes this one `busy`."""
    agent = agent or get_agent()
    if not _process_lock.acquire(blocking=wait):
        return CycleResult("busy")
    try:
        result = _decide(agent, wait, policy or eta.current_policy())
        if result.status == "done":
            _carry_out(agent, result)
            publish_overview(result.changed or _rows_changed(result.fingerprint))
    finally:
        _process_lock.release()
    if result.status == "done":
        eta.refresh_if_due()
    return result


_last_fingerprint = 0


def _rows_changed(fingerprint: int) -> bool:
    """True when the job rows differ from the previous cycle's (jobs submitted or deleted)."""
    global _last_fingerprint
    changed, _last_fingerprint = fingerprint != _last_fingerprint, fingerprint
    return changed


def _decide(agent: Agent, wait: bool, policy: Policy) -> CycleResult:
    """Everything up to and including the commit, in one transaction under the cluster lock."""
    try:
        with transaction.atomic():
            if not _cluster_lock(wait):
                return CycleResult("busy")
            return _plan_and_commit(agent, policy)
    except CommitConflict as exc:
        logger.info("scheduling cycle abandoned: %s", exc)
        return CycleResult("conflict", message=str(exc))


def _cluster_lock(wait: bool) -> bool:
    """Take the transaction-level advisory lock on Postgres; elsewhere the process lock suffices."""
    if connection.vendor != "postgresql":
        return True
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [LOCK_KEY])
        return wait or bool(cursor.fetchone()[0])


def _plan_and_commit(agent: Agent, policy: Policy) -> CycleResult:
    timings, lap = {}, perf_counter()
    state = snapshot.load()
    observation = observe.reconcile(agent, state)
    metrics.store_observation(observation)
    if not observation.problem and sync_nodes(observation.nodes):
        state = replace(state, nodes=snapshot.load_nodes())  # the cluster's inventory changed
    changes, notes = observe.transitions(observation, state)
    leaving = frozenset(change.job for change in changes if change.leaves)
    view = state.snapshot(observation.at.timestamp(), leaving, bool(policy.service_bands))
    timings["snapshot_s"], lap = perf_counter() - lap, perf_counter()
    plan = plan_cycle(view, policy)
    timings["plan_s"], lap = perf_counter() - lap, perf_counter()
    commit_cycle(state, view, plan, changes, observation, agent.simulated, notes)
    timings["commit_s"] = perf_counter() - lap
    started = tuple(state.rows[d.job].id for d in plan.decisions if d.kind != "evict")
    fingerprint = hash(frozenset((key, row.status) for key, row in state.rows.items()))
    return CycleResult(
        "done",
        plan.decisions,
        tuple(changes),
        timings,
        started_ids=started,
        fingerprint=fingerprint,
    )


def _carry_out(agent: Agent, result: CycleResult) -> None:
    """After the commit: stop what finished or was evicted, start what was placed or moved."""
    for change in result.transitions:
        if change.leaves:
            agent.stop(*change.job)
    for decision in result.decisions:
        if decision.kind == "evict":
            agent.stop(*decision.job)
    placed = Job.objects.filter(id__in=result.started_ids, status__in=HOLDING)
    for values in placed.values(*SPEC_FIELDS):
        agent.start(spec_from_values(values))
