"""Allocate (R4.4): place pending jobs on free capacity in queue order; never evict.

With `Policy.backfill` the first job blocked by room gets a reservation and later jobs start only
if they do not delay it (B1-B4, scheduler/actions/backfill.py); without it, nothing changes.
"""

from __future__ import annotations

from ..model import Job
from ..ordering import JobQueues
from ..placement import place_job, pools_for
from ..session import Session, gpus, nodes_of
from .backfill import Backfill


def allocate(session: Session) -> None:
    """Pop pending jobs in allocation order (R4.1-R4.3); check the limit and interactive quota
    (R3.1, R3.2); place all pods or none (R6.1). A failed job is skipped for this cycle and the
    reason kept for the user — or, with backfill, reserved (B1) and later starts checked against
    the reservation (B2, B3); an overrunning backfilled job may give way to it (B4)."""
    queue = JobQueues(session.queues, session.pending(), session.total)
    backfill = Backfill(session) if session.policy.backfill else None
    while (job := queue.pop()) is not None:
        blocked = session.capacity_block(job)
        if blocked:
            session.reasons[job.key] = blocked
            session.hard_blocked.add(job.key)
            continue
        checkpoint = session.state.checkpoint()
        placement = place_job(session.state, job, session.policy)
        if placement is None:
            if backfill is None or not backfill.blocked(job):
                session.reasons[job.key] = no_fit_reason(session, job)
            elif len(backfill.reservations) == 1 and not backfill.reordered:
                queue.reorder(shortest_first)  # B6: behind the first reservation
                backfill.reordered = True
            continue
        if backfill is not None and backfill.handled(job, placement, checkpoint):
            continue
        session.record(
            "start",
            job,
            "allocate",
            f"started on {nodes_of(placement)}: free GPUs (R4.4)",
            placement,
        )


def shortest_first(job: Job) -> tuple:
    """B6: inside a project, higher priority first (R4.3; then the lower service band, L2), then
    the shortest predicted run (unknown last), then older."""
    expected = job.expected_s if job.expected_s is not None else float("inf")
    return (-job.priority_value, job.band, expected, job.order, job.name)


def no_fit_reason(session: Session, job: Job) -> str:
    """Why no node can take the job now, in plain words (R5.3, R5.4, R6.1)."""
    pools = session.queue(job).node_pools
    where = f"in pool {', '.join(pools)}" if pools else "in the cluster"
    largest = max((index.largest for index in pools_for(session.state, job)), default=0)
    if not largest:
        return f"no ready node {where} (R5)"
    if job.gpus >= 1 and job.whole_devices_per_pod > largest:
        return f"no node {where} has {gpus(job.milli_per_pod)} (R5.3)"
    if job.pods > 1:
        return (
            f"the {job.pods} pods of {gpus(job.milli_per_pod)} each do not all fit at once "
            f"{where} (R6.1)"
        )
    if job.gpus >= 1:
        return f"no node {where} has {gpus(job.milli_per_pod)} idle (R5.3)"
    return f"no device {where} has {gpus(job.milli_per_pod)} free (R5.4)"
