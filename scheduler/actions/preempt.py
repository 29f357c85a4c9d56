"""Preempt (R10): a pending job evicts lower-priority preemptible jobs of its own project."""

from __future__ import annotations

from ..bands import victim_note
from ..minruntime import Shielded
from ..model import Job
from ..ordering import JobQueues
from ..resources import unplaceable
from ..session import Session, nodes_of
from .eviction import record_moves, solve
from .signatures import FailedJobs


def preempt(session: Session) -> None:
    """Preemptors in allocation order (R10.1); victims are running preemptible jobs of the same
    project with strictly lower priority (R10.2). No fair-share test: nothing moves between
    projects. The preemptor is placed with the usual checks, evaluated with its victims gone,
    so at its limit a project's interactive job can displace its own train job.

    With service bands, priority is the class value then the lower band (L2), so a job of a
    lower band preempts running jobs of its class that have held more GPU-hours (L3).

    Victims still within their preempt min runtime are left out (R7.4). A job no node could
    hold even empty (`resources.unplaceable`) is not tried.

    With user fair share the leaf queue is the user's (R21.8): a job preempts only its own
    user's jobs, and a teammate's GPUs move only by reclaim's rules (R21.5, R21.6)."""
    queue = JobQueues(session.queues, session.pending(), session.total)
    failed = FailedJobs()
    pool = session.victims()
    while (job := queue.pop()) is not None:
        if not job.preemptible and _over_quota(session, job):
            continue
        if failed.skip(job):
            continue
        leaf = session.leaf(job).name
        lowest = pool.lowest_priority(leaf)
        if lowest is None or lowest >= job.rank or unplaceable(session, job):
            continue
        shielded = Shielded()
        ordered = pool.queue([leaf], job.milli_total, keep=_victims(session, job, shielded))
        outcome = solve(
            session,
            job,
            ordered,
            lambda *_: True,
            max_candidates=session.policy.max_reclaim_candidates,
        )
        if outcome is None:
            failed.add(job)
            session.explain(job, shielded.reason(session.now, "preemption"))
            continue
        for victim in outcome.evicted:
            session.record(
                "evict", victim, "preempt", preempted_reason(job, victim), beneficiary=job.key
            )
        record_moves(session, job, outcome, "preempt", "R10.2")
        session.record(
            "start",
            job,
            "preempt",
            f"started on {nodes_of(outcome.placement)} by preempting lower-priority jobs of "
            f"{job.project} (R10)",
            outcome.placement,
        )


def _victims(session: Session, job: Job, shielded: Shielded):
    """R10.2's victims of `job`: strictly lower priority (the class, then with L3 the band,
    L2), and not within the preempt min runtime (R7.4; those are noted in `shielded`)."""
    protection = session.protection
    by_band = session.policy.band_preemption  # L3

    def keep(victim: Job) -> bool:
        """A lower-priority victim past its preempt min runtime."""
        if by_band:
            if victim.rank >= job.rank:
                return False
        elif victim.priority_value >= job.priority_value:
            return False
        return not protection.active or shielded.admits(victim, protection.preempt_until(victim))

    return keep


def preempted_reason(job: Job, victim: Job) -> str:
    """Why a victim of R10 is evicted: a higher priority class (R10.2) or, in the same class,
    a lower service band (L3)."""
    if job.priority_value > victim.priority_value:
        return (
            f"preempted: {job.name} of {job.project} has higher priority "
            f"({job.priority_value} > {victim.priority_value}) (R10.2)" + victim_note(victim)
        )
    held = victim.attained_gpu_s / 3600.0
    return (
        f"preempted: {job.name} of {job.project} has held fewer GPU-hours (service band "
        f"{job.band} < {victim.band}; this job has held {held:.1f} GPU-h) (L3, R10.2)"
    )


def _over_quota(session: Session, job: Job) -> bool:
    """R3.2 for a non-preemptible preemptor, ignoring the limit (victims may free it)."""
    for queue in session.queue(job).path():
        if queue.deserved is not None and queue.allocated_np + job.milli_total > queue.deserved:
            return True
    return False
