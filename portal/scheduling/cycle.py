"""One scheduling cycle: look at the cluster, decide under the lock, then tell the cluster.

    observe + reconcile the agent (no lock, no transaction: network calls)
    -> lock -> load rows -> transitions -> plan_cycle -> commit   (one short transaction)
    -> agent.stop/start from the committed rows (network again, no lock) -> publish the overview

The lock is cluster-wide: a Postgres transaction-level advisory lock (released by the commit or
by the death of the connection, so a worker killed mid-cycle leaves the database exactly as it
was), plus a process lock that also serialises cycles on SQLite. The lock covers database work
only: with a real API server at tens of milliseconds a call, holding it across the agent's calls
would make every other cycle and every write wait on the network. Its hold time is measured and
kept with the other timings (`portal.scheduling.metrics`). What the agent is told comes from the
committed rows and is idempotent; if the telling never happens (a crash), the next cycle's
reconciliation catches up from the database.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, replace
from time import perf_counter
from typing import Literal

from django.core.cache import cache
from django.db import connection, transaction

from agents.base import Agent, Observation
from portal.budgets import services as budget_services
from portal.budgets.models import Budget
from portal.budgets.usage import measure_all
from portal.cluster import metrics
from portal.cluster.sync import sync_nodes
from portal.jobs.models import HOLDING, Job
from portal.notify import dispatch
from portal.reservations import services as reservation_services
from portal.scheduling import (
    cycle_metrics,
    eta,
    external,
    observe,
    past_usage,
    runs,
    snapshot,
)
from portal.scheduling.agent import SPEC_FIELDS, get_agent, spec_from_values
from portal.scheduling.commit import CommitConflict, commit_cycle
from portal.scheduling.publish import publish_overview
from portal.scheduling.transitions import Transition
from scheduler import Decision, Policy, plan_cycle

logger = logging.getLogger(__name__)

LOCK_KEY = 0x416C6C6F74  # "Allot": the advisory-lock id of the scheduling cycle
FINGERPRINT_KEY = "allot:cycle:fingerprint"  # of the job rows the last cycle read, any process
_process_lock = threading.Lock()


@dataclass(frozen=True)
class CycleResult:
    """What one cycle did. `status`: done, busy (another cycle holds the lock), conflict, or
    unsynced (the agent's view of the cluster may be partial: nothing decided, nothing told)."""

    status: Literal["done", "busy", "conflict", "unsynced"]
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
        lap = perf_counter()
        observation = observe.reconcile(agent)
        metrics.store_observation(observation)
        past_usage.warm(observation.at)  # R2.9's runs summed here, outside the lock, once a minute
        budgets = measure_all(Budget.objects.all(), observation.at)  # R20.1, outside the lock
        observed_s = perf_counter() - lap
        if observation.synced:
            result = _decide(agent, observation, wait, policy or eta.current_policy(), budgets)
        else:  # pods it does not see may hold GPUs: no stop, start or move on this view
            message = observation.problem or "the agent's view of the cluster is not synced"
            logger.warning("scheduling cycle skipped: %s", message)
            result = CycleResult("unsynced", message=message)
        result.timings["observe_s"] = observed_s
        if result.status == "done":
            cycle_metrics.record_starts(runs.first_starts(result.started_ids, observation.at))
            lap = perf_counter()
            _carry_out(agent, result)
            external.explain(agent, observation)  # why other tools' pods wait (issue 33)
            result.timings["carry_out_s"] = perf_counter() - lap
            publish_overview(result.changed or _rows_changed(result.fingerprint))
        cycle_metrics.record(result.status, result.timings, result.decisions)
        cycle_metrics.record_agent(agent.take_counts())
    finally:
        _process_lock.release()
    if result.status == "done":
        eta.refresh_if_due()
    return result


def _rows_changed(fingerprint: int) -> bool:
    """True when the job rows differ from the previous cycle's, in whichever process it ran."""
    changed = cache.get(FINGERPRINT_KEY) != fingerprint
    if changed:
        cache.set(FINGERPRINT_KEY, fingerprint, timeout=None)
    return changed


def _decide(
    agent: Agent, observation: Observation, wait: bool, policy: Policy, budgets=None
) -> CycleResult:
    """Snapshot, plan and commit in one transaction under the cluster lock: database work only."""
    timings: dict[str, float] = {}
    try:
        with transaction.atomic():
            if not _cluster_lock(wait):
                return CycleResult("busy")
            locked = perf_counter()
            try:
                return _plan_and_commit(observation, agent.simulated, policy, timings, budgets)
            finally:
                timings["lock_s"] = perf_counter() - locked  # until the commit below, nearly
    except CommitConflict as exc:
        logger.info("scheduling cycle abandoned: %s", exc)
        return CycleResult("conflict", timings=timings, message=str(exc))


def _cluster_lock(wait: bool) -> bool:
    """Take the transaction-level advisory lock on Postgres; elsewhere the process lock suffices."""
    if connection.vendor != "postgresql":
        return True
    function = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {function}(%s)", [LOCK_KEY])
        return wait or bool(cursor.fetchone()[0])


def _plan_and_commit(
    observation: Observation,
    simulated: bool,
    policy: Policy,
    timings: dict[str, float],
    budgets=None,
) -> CycleResult:
    lap = perf_counter()
    state = snapshot.load(observation.at, budgets)
    if not observation.problem and sync_nodes(observation.nodes):
        state = replace(
            state, nodes=snapshot.load_nodes(state.jobs)
        )  # the cluster's inventory changed
    changes, notes = observe.transitions(observation, state)
    leaving = frozenset(change.job for change in changes if change.leaves)
    view = state.snapshot(observation.at.timestamp(), leaving, bool(policy.service_bands))
    timings["snapshot_s"], lap = perf_counter() - lap, perf_counter()
    plan = plan_cycle(view, policy)
    timings["plan_s"], lap = perf_counter() - lap, perf_counter()
    commit_cycle(state, view, plan, changes, observation, simulated, notes)
    dispatch.after_commit(budget_services.announce(list(state.budgets), observation.at))  # R20.5
    dispatch.after_commit(reservation_services.announce(observation.at))  # before a slot (R22)
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
    """After the commit: stop what finished or was evicted, start what was placed or moved.

    Starts are read back from the committed rows, so a job deleted since the commit is not
    started, and a start repeated by the next cycle's reconciliation changes nothing. The agent
    gets them all in one call (it may carry independent jobs out concurrently). The logs of the
    runs that ended are kept first, while their pods still exist."""
    ended = [change.job for change in result.transitions if change.leaves]
    runs.keep_logs(agent, ended + [d.job for d in result.decisions if d.kind != "start"])
    stops = [change.job for change in result.transitions if change.leaves]
    stops += [decision.job for decision in result.decisions if decision.kind == "evict"]
    placed = Job.objects.filter(id__in=result.started_ids, status__in=HOLDING)
    agent.carry_out(stops, [spec_from_values(values) for values in placed.values(*SPEC_FIELDS)])
