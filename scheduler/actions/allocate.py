"""Allocate (R4.4): place pending jobs on free capacity in queue order; never evict.

With `Policy.backfill` the first job blocked by room gets a reservation and later jobs start only
if they do not delay it (B1-B4, scheduler/actions/backfill.py); without it, nothing changes.
"""

from __future__ import annotations

from .. import topology
from ..model import Job
from ..ordering import JobQueues
from ..placement import place_job, pools_for
from ..quantity import memory_text
from ..resources import asked, blocked_by_resources, unplaceable
from ..session import Session, gpus, nodes_of
from .backfill import Backfill
from .booking import Bookings


def allocate(session: Session) -> None:
    """Pop pending jobs in allocation order (R4.1-R4.3); check the limit and interactive quota
    (R3.1, R3.2); place all pods or none (R6.1). A failed job is skipped for this cycle and the
    reason kept for the user — or, with backfill, reserved (B1) and later starts checked against
    the reservation (B2, B3); an overrunning backfilled job may give way to it (B4). A start on
    booked capacity must leave room for the booking (R22.2, R22.5)."""
    pending = session.pending()
    backfill = Backfill(session) if session.policy.backfill else None
    bookings = Bookings(session) if session.bookings else None
    # Without backfill and bookings allocate only places: the cluster gets no emptier within
    # it, so a job of a shape that failed fails again (`failed`), and once no device has room
    # left no job asking for GPUs can start, whatever its turn (`_refuse_all`). A full cluster
    # with a long queue otherwise tried every job in order and in full every cycle.
    plain = backfill is None and bookings is None
    failed: set[tuple] = set()
    gpus_only = plain and all(job.whole or job.shared for job in pending)
    if gpus_only and no_gpu_room(session):
        _refuse_all(session, pending)
        return
    queue = JobQueues(session.queues, pending, session.total)
    while (job := queue.pop()) is not None:
        if _blocked(session, job):
            continue
        checkpoint = session.state.checkpoint()
        shape = placement_shape(job) if plain else None
        if shape is not None and shape in failed:
            placement = None
        else:
            placement = place_job(session.state, job, session.policy)
            if placement is None and shape is not None:
                failed.add(shape)
        if placement is None:
            if backfill is None or not backfill.blocked(job):
                _refuse(session, job)
            elif len(backfill.reservations) == 1 and not backfill.reordered:
                queue.reorder(shortest_first)  # B6: behind the first reservation
                backfill.reordered = True
            continue
        held, note = bookings.check(job, placement) if bookings is not None else (None, "")
        if held:  # R22.2, R22.5: it would take capacity a reservation needs
            session.state.rollback(checkpoint)
            session.held.add(job.key)
            session.reasons[job.key] = held
            continue
        if backfill is not None and backfill.handled(job, placement, checkpoint):
            continue
        session.record(
            "start",
            job,
            "allocate",
            f"started on {nodes_of(placement)}: free {'GPUs' if job.gpus else 'CPU'}"
            + (f"; {note}" if note else " (R4.4)")
            + topology.landed_note(session.state, job, placement),
            placement,
        )
        if gpus_only and no_gpu_room(session):
            _refuse_all(session, queue.drain())
            return


def _refuse(session: Session, job: Job) -> None:
    """The reason a job that found no room keeps: why no node could ever hold it (no later
    action can help it; the reason stays, Session.explain), else why none can now."""
    never = unplaceable(session, job)
    if never:
        session.reasons[job.key] = never
        session.hard_blocked.add(job.key)
    else:
        session.reasons[job.key] = no_fit_reason(session, job)


def _blocked(session: Session, job: Job) -> bool:
    """True, with the reason kept, when `capacity_block` holds the job: a spent hard budget, a
    limit (its user's, its project's) or, for non-preemptible work, quota."""
    blocked = session.capacity_block(job)
    if blocked:
        session.reasons[job.key] = blocked
        session.hard_blocked.add(job.key)
    return bool(blocked)


def _refuse_all(session: Session, jobs: list[Job]) -> None:
    """Each job's reason when nothing can start any more: what allocate's turn would have said
    (the state no longer changes, so the order they are told in does not matter)."""
    for job in jobs:
        if not _blocked(session, job):
            _refuse(session, job)


def no_gpu_room(session: Session) -> bool:
    """True when no eligible device has room for any GPU request: none idle or releasing (the
    pools' buckets above 0 and their touched nodes, which hold releasing devices) and none
    shared with room left."""
    return not any(
        index.touched or index.shared or any(index.buckets[1:])
        for index in session.state.pools.values()
    )


def placement_shape(job: Job) -> tuple | None:
    """What `place_job` reads of a job (its pods' GPUs, GPU memory, CPU and memory, and its
    project's node pools), or None for a job with a topology constraint (its domains are
    chosen by its labels and levels: never taken for another's)."""
    if job.topology_required or job.topology_preferred:
        return None
    return (job.project, job.pods, job.gpus, job.gpu_memory_bytes, job.cpu_millis,
            job.memory_bytes)  # fmt: skip


def shortest_first(job: Job) -> tuple:
    """B6: inside a project, higher priority first (R4.3; then the lower service band, L2), then
    the shortest predicted run (unknown last), then older."""
    expected = job.expected_s if job.expected_s is not None else float("inf")
    return (-job.priority_value, job.band, expected, job.order, job.name)


def no_fit_reason(session: Session, job: Job) -> str:
    """Why no node can take the job now, in plain words (R5.3, R5.4, R5.5, R6.1), naming the
    resource that does not fit when it is CPU, memory or GPU memory (issue 26), for a job some
    emptied node could hold (allocate gives `unplaceable`'s reason to the others). A job with a
    required topology level gets the level's reason (R23.2)."""
    if job.topology_required:  # R23.2: the level and its roomiest domain
        return topology.required_reason(session.state, job)
    pools = session.queue(job).node_pools
    where = f"in pool {', '.join(pools)}" if pools else "in the cluster"
    if job.cpu_millis or job.memory_bytes or job.gpu_memory_bytes is not None:
        # One scan of the pools per job shape and cycle: later jobs of the same shape find the
        # cluster no emptier within allocate, and reasons are redone every cycle.
        shape = (pools, job.gpus, job.pods, job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes)
        if shape not in session.fit_reasons:
            session.fit_reasons[shape] = resource_reason(session, job, where)
        if session.fit_reasons[shape]:
            return session.fit_reasons[shape]
    return gpu_reason(job, where) + _outside(session, job)


def gpu_reason(job: Job, where: str) -> str:
    """Why the job's GPUs do not fit now (R5.3, R5.4, R5.5, R6.1)."""
    if job.gpu_memory_bytes is not None:
        memory = memory_text(job.gpu_memory_bytes)
        return f"no device {where} has {memory} of GPU memory free (R5.5)"
    if not (job.whole or job.shared):
        return f"no node {where} has room for a pod of {asked(job)} (R5)"
    if job.pods > 1:
        return (
            f"the {job.pods} pods of {gpus(job.milli_per_pod)} each do not all fit at once "
            f"{where} (R6.1)"
        )
    if job.whole:
        return f"no node {where} has {gpus(job.milli_per_pod)} idle (R5.3)"
    return f"no device {where} has {gpus(job.milli_per_pod)} free (R5.4)"


def _outside(session: Session, job: Job) -> str:
    """ "; 16 GPUs there are held by pods outside Allot (R2.6)" when pods Allot did not place
    hold GPUs of the job's pools (issue 33), else "". Counted once per pools and cycle."""
    key = ("outside", session.queue(job).node_pools)
    if key not in session.fit_reasons:
        members = [name for index in pools_for(session.state, job) for name in index.members]
        held = sum(len(session.nodes[name].outside_devices) for name in members)
        are = "s there are" if held != 1 else " there is"
        session.fit_reasons[key] = (
            f"; {held} GPU{are} held by pods outside Allot (R2.6)" if held else ""
        )
    return session.fit_reasons[key] or ""


def resource_reason(session: Session, job: Job, where: str) -> str | None:
    """The reason naming CPU, memory or GPU memory when one of them keeps the job off every node
    of its pools now (issue 26), or None when the GPUs are what is missing. A job too large for
    every node even empty has :func:`~scheduler.resources.unplaceable`'s reason instead."""
    indexes = pools_for(session.state, job)
    nodes = [session.state.nodes[name] for index in indexes for name in sorted(index.members)]
    blocked = blocked_by_resources(nodes, job)
    if blocked:
        rule = "R6.1" if job.pods > 1 else "R5"
        return f"no node {where} has room for a pod of {asked(job)}: {blocked} ({rule})"
    return None
