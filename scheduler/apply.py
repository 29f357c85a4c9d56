"""Carry a plan out on a snapshot, purely: what the portal does to its database, in memory.

Used by the replay, the simulator, the benchmarks and the property tests to reach steady state
(R1.3: repeat cycles until one makes no decision).
"""

from __future__ import annotations

from dataclasses import replace

from .model import Job, Plan, Snapshot


def apply_plan(snapshot: Snapshot, plan: Plan) -> Snapshot:
    """Return the snapshot after `plan`: starts and moves take their placement, evictions none.

    An evicted job returns to Pending with its submission order unchanged (R1.3, §13).
    """
    placements = {}
    for decision in plan.decisions:
        placements[decision.job] = decision.placement if decision.kind != "evict" else ()
    if not placements:
        return snapshot
    jobs = tuple(
        replace(job, placement=placements[job.key], degraded_since=None)
        if job.key in placements
        else job
        for job in snapshot.jobs
    )
    return replace(snapshot, jobs=jobs)


def with_jobs(snapshot: Snapshot, jobs: tuple[Job, ...]) -> Snapshot:
    """The same cluster with another job list."""
    return replace(snapshot, jobs=jobs)
