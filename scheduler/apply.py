"""Carry a plan out on a snapshot, purely: what the portal does to its database, in memory.

Used by the replay, the simulator, the benchmarks and the property tests to reach steady state
(R1.3: repeat cycles until one makes no decision).
"""

from __future__ import annotations

from dataclasses import replace

from .model import Decision, Job, Plan, Snapshot


def apply_plan(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """Return the snapshot after `plan`: starts and moves take their placement, evictions none.

    An evicted job returns to Pending with its submission order unchanged (R1.3, §13). For
    backfill's bookkeeping (B1, B4), a started or moved job gets `started = snapshot.now` and
    `backfilled` True only for a decision with action ``backfill`` (B2); an evicted job gets
    `started = None` and `backfilled = False`.
    """
    last: dict = {}
    for decision in plan.decisions:
        last[decision.job] = decision
    if not last:
        return snapshot
    jobs = tuple(
        _after(job, last[job.key], snapshot.now) if job.key in last else job
        for job in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs)


def _after(job: Job, decision: Decision, now: float) -> Job:
    if decision.kind == "evict":
        return replace(
            job, placement=(), degraded_since=None, started=None, expected_end=None,
            backfilled=False,
        )  # fmt: skip
    return replace(
        job,
        placement=decision.placement,
        degraded_since=None,
        started=now,
        expected_end=None,
        backfilled=decision.action == "backfill",
    )
