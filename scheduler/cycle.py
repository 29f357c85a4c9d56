"""One scheduling cycle: snapshot -> session -> ordered actions -> plan (R1.1)."""

from __future__ import annotations

from .actions.allocate import allocate
from .actions.backfill import keep_reservation_reasons
from .actions.booking import serve_reservations
from .actions.budget import explain_over_budget, reclaim_over_budget
from .actions.consolidation import consolidate
from .actions.failed import release_stranded, settle_stranded, take_off_failed_devices
from .actions.preempt import preempt
from .actions.reclaim import reclaim
from .actions.stale import evict_stale_gangs
from .apply import apply_plan
from .budgets import over_budget_keys
from .model import Plan, Policy, Snapshot
from .session import Session


def plan_cycle(snapshot: Snapshot, policy: Policy | None = None) -> Plan:
    """Decide one cycle: allocate, consolidation, reclaim, preempt, stale gang eviction in KAI's
    order (R1.1), on fair shares fixed at session open (R1.2). Pure: the same snapshot gives the
    same plan. Jobs on failed devices leave them first, served before anyone is lent their GPUs
    (issue 26, F1-F3 in scheduler/actions/failed.py).

    With `Policy.backfill`, allocate makes reservations (B1-B4); consolidation then serves only
    reserved jobs and jobs ahead of them, and no later action takes up a job held for a
    reservation (B3).

    Budgets (R20, scheduler/budgets.py): a job held by a spent budget is never placed; a job past
    a budget that lets it run as preemptible work starts only in allocate, and within-budget jobs
    take its GPUs back before reclaim (R20.4).

    Reservations (R22, scheduler/actions/booking.py): inside a slot the project's jobs start on
    the reserved pool first, taking it back from whatever holds it (R22.3, R22.5) and keeping
    it from other actions (R22.4); allocate starts nothing on reserved capacity that would
    still hold it at a slot's start (R22.2)."""
    policy = policy or Policy()
    session = Session(snapshot, policy)
    stranded = take_off_failed_devices(session)  # F1
    if session.bookings:
        serve_reservations(session)  # R22.3-R22.5
    allocate(session)
    explain_over_budget(session)
    spent = over_budget_keys(session.jobs)  # R20.3: idle capacity only
    if policy.consolidation:
        session.withheld = session.behind | session.held | spent  # B3
        consolidate(session)
    session.withheld = session.held | spent  # B3; R20.3
    release_stranded(session, stranded)  # F2
    if policy.reclaim:
        reclaim_over_budget(session)  # R20.4
        reclaim(session)
    if policy.preempt:
        preempt(session)
    settle_stranded(session, stranded)  # F3
    session.withheld = set()
    evict_stale_gangs(session, snapshot.now)
    if session.reservations:
        keep_reservation_reasons(session)
    return session.plan()


def settle(
    snapshot: Snapshot, policy: Policy | None = None, max_cycles: int = 100
) -> tuple[Snapshot, list[Plan]]:
    """Repeat cycles, applying each plan, until one decides nothing (steady state, R1.3).

    Returns the final snapshot and every plan made (the last one empty unless `max_cycles`
    ran out first).
    """
    plans: list[Plan] = []
    for _ in range(max_cycles):
        plan = plan_cycle(snapshot, policy)
        plans.append(plan)
        if plan.empty:
            break
        snapshot = apply_plan(snapshot, plan)
    return snapshot, plans
