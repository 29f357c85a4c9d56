"""Consolidation (R11): make room for a pending job by moving running jobs, evicting none."""

from __future__ import annotations

from ..ordering import JobQueues
from ..placement import pools_for
from ..session import Session, nodes_of
from .eviction import record_moves, solve
from .signatures import FailedJobs


def consolidate(session: Session) -> None:
    """For each pending preemptible job whose demand the free GPUs cover in total (R11.1),
    try moving up to `max_consolidation_preemptees` running preemptible jobs of any project;
    a scenario counts only if every moved job found a new place. Interactive jobs are never
    moved (R7.3)."""
    if not any(index.free_milli for index in session.state.pools.values()):
        return  # a full cluster leaves nothing to consolidate into
    queue = JobQueues(session.queues, session.pending(), session.total)
    failed = FailedJobs()
    pool = session.victims()
    while (job := queue.pop()) is not None:
        if not job.preemptible or failed.skip(job) or session.capacity_block(job):
            continue
        if _free_milli(session, job) < job.milli_total:
            continue
        victims = pool.queue(pool.by_queue, job.milli_total)
        outcome = solve(
            session,
            job,
            victims,
            lambda _job, evicted, _before: not evicted,
            max_candidates=session.policy.max_consolidation_preemptees,
        )
        if outcome is None:
            failed.add(job)
            continue
        record_moves(session, job, outcome, "consolidation", "R11.1")
        session.record(
            "start",
            job,
            "consolidation",
            f"started on {nodes_of(outcome.placement)} after consolidating running jobs (R11.1)",
            outcome.placement,
        )


def _free_milli(session: Session, job) -> int:
    """Idle and releasing GPUs the job's pools hold in total."""
    return sum(index.free_milli for index in pools_for(session.state, job))
