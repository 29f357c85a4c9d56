"""Reservations in the cycle (Allot's R22 rules, docs/reservations.md).

Before a slot (R22.2) a reservation is a *stand-in* job (`scheduler.reservations.stand_in`)
that must fit its pool at the slot's start `T1`; its :class:`~.backfill.Shadow` is the pool at
T1: what runs now, less the jobs predicted to end by T1 (backfill's `predicted_end`, B1) and
less the reserving project's own jobs, which run inside the reservation. Allocate may start
another project's job on the pool only if it is preemptible and predicted to end by T1, or if
the stand-in still fits with it; otherwise the job is held, naming the reservation.

Inside the slot (R22.3-R22.5) the project's pending jobs are served first on the reserved pool,
up to the reserved GPUs, taking back what still holds them; the project's jobs there are out
of other projects' reach; idle reserved GPUs are lent to other projects' preemptible work.
"""

from __future__ import annotations

from contextlib import contextmanager

from ..model import Job, PodPlacement, Reservation
from ..ordering import job_order_key
from ..placement import place_job
from ..reservations import stand_in
from ..session import Session, gpus, nodes_of
from ..state import NodeState
from .backfill import Shadow, moment, predicted_end, still_free


def active_reservations(session: Session) -> list[Reservation]:
    """The reservations inside their slot now whose project is in the snapshot (R22.3)."""
    return [r for r in session.bookings if r.active(session.now) and r.project in session.queues]


def nodes_for(session: Session, reservation: Reservation) -> list[NodeState]:
    """The eligible nodes of the reservation's pool (every pool when it names none), by name."""
    pools = [reservation.pool] if reservation.pool is not None else sorted(session.state.pools)
    return [
        session.state.nodes[name]
        for pool in pools
        if pool in session.state.pools
        for name in sorted(session.state.pools[pool].members)
    ]


def reserved_job(reservation: Reservation, nodes: list[NodeState]) -> Job:
    """The stand-in of the reservation on these nodes (R22.1)."""
    return stand_in(reservation, max((n.gpus for n in nodes), default=0))


def _on(placement: tuple[PodPlacement, ...], names: set[str]) -> bool:
    return any(pod.node in names for pod in placement)


def _milli_on(job: Job, placement: tuple[PodPlacement, ...], names: set[str]) -> int:
    """Thousandths of a GPU the job's pods hold on these nodes."""
    return sum(job.milli_per_pod for pod in placement if pod.node in names)


# ------------------------------------------------------------------- inside the slot (R22.3-5)


def serve_reservations(session: Session) -> None:
    """For each reservation inside its slot, the project's pending jobs in allocation order
    (R4.3) start on the reserved pool first, while the project holds no more than the reserved
    GPUs there (R22.3); when a job does not fit, other projects' preemptible jobs on the pool
    are evicted until it does: first those that started before the slot (what still holds the
    capacity at T1, R22.3), then work lent since (R22.5), newest first. The usual checks on the
    job stay (limits, interactive quota, budgets, R3, R20). Then the project's running jobs on
    the pool, oldest first up to the reserved GPUs, are out of reach of other actions (R22.4)."""
    for reservation in sorted(active_reservations(session), key=lambda r: (r.start, r.name)):
        nodes = nodes_for(session, reservation)
        names = {n.name for n in nodes}
        room = reservation.gpus * 1000 - _held(session, reservation.project, names)
        mine = [j for j in session.pending() if j.project == reservation.project]
        failed: set[tuple] = set()  # shapes that found no room even with every victim gone
        for job in sorted(mine, key=job_order_key):
            if room <= 0:
                break
            shape = (job.gpus, job.pods, job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes)
            if job.milli_total > room or shape in failed or session.capacity_block(job):
                continue
            if _serve(session, reservation, job, names):
                room -= job.milli_total
            else:
                failed.add(shape)
        _protect(session, reservation, names)


def _held(session: Session, project: str, names: set[str]) -> int:
    state = session.state
    return sum(
        _milli_on(state.jobs[key], placement, names)
        for key, placement in state.placement.items()
        if key[0] == project
    )


def _serve(session: Session, reservation: Reservation, job: Job, names: set[str]) -> bool:
    """Start `job` on the reserved pool, evicting other projects' preemptible jobs there if
    need be (R22.3, R22.5), and return True; leave everything unchanged and return False when
    even that does not make room."""
    state = session.state
    checkpoint = state.checkpoint()
    with only_pool(session, job, reservation.pool):
        placement = place_job(state, job, session.policy)
        evicted: list[tuple[Job, tuple[PodPlacement, ...]]] = []
        if placement is None:
            for victim in _victims(session, reservation, names):
                old = state.unplace(victim)
                evicted.append((victim, old))
                placement = place_job(state, job, session.policy)
                if placement is not None:
                    break
    if placement is None:
        state.rollback(checkpoint)
        return False
    kept = set()
    for victim, old in reversed(evicted):  # the job left these devices free: keep running
        if still_free(state.nodes, victim, old):
            state.place(victim, old)
            kept.add(victim.key)
    state.commit(checkpoint)
    for victim, _ in evicted:
        if victim.key not in kept:
            session.record(
                "evict", victim, "reservation", evicted_reason(victim, reservation),
                beneficiary=job.key,
            )  # fmt: skip
    session.record(
        "start",
        job,
        "reservation",
        f"started on {nodes_of(placement)}: {reservation.project}'s reservation "
        f"{reservation.name!r} holds {gpus(reservation.gpus * 1000)} there until "
        f"{moment(reservation.end)} (R22.3)",
        placement,
    )
    return True


@contextmanager
def only_pool(session: Session, job: Job, pool: str | None):
    """Place the job's project on `pool` alone for the duration (the reservation's capacity;
    None: leave its pools as they are)."""
    queue = session.queue(job)
    saved = queue.node_pools
    if pool is not None:
        queue.node_pools = (pool,)
    try:
        yield
    finally:
        queue.node_pools = saved


def _victims(session: Session, reservation: Reservation, names: set[str]) -> list[Job]:
    """Other projects' running preemptible jobs on the reserved nodes: those started before the
    slot first (R22.3), then those lent since (R22.5), newest first within each."""
    state = session.state
    found = [
        j
        for j in session.running_untouched()
        if j.project != reservation.project
        and j.preemptible
        and j.key not in session.booked
        and _on(state.placement[j.key], names)
    ]
    return sorted(found, key=lambda j: (_lent(j, reservation), -(j.started or 0.0), -j.order))


def _lent(job: Job, reservation: Reservation) -> bool:
    return job.started is not None and job.started >= reservation.start


def evicted_reason(victim: Job, reservation: Reservation) -> str:
    """Why a job on reserved capacity gives it back (R22.3, R22.5)."""
    whose = f"{reservation.project}'s reservation {reservation.name!r}"
    if _lent(victim, reservation):
        return (
            f"evicted: ran on GPUs lent from {whose} as preemptible work; {reservation.project} "
            "needs them now (R22.5)"
        )
    return (
        f"evicted: still on the capacity {whose} holds from {moment(reservation.start)} to "
        f"{moment(reservation.end)} (R22.3)"
    )


def _protect(session: Session, reservation: Reservation, names: set[str]) -> None:
    """The project's running jobs on the reserved nodes, oldest first, as long as they fit in
    the reserved GPUs, are not victims of reclaim, preemption or consolidation (R22.4)."""
    state = session.state
    mine = [
        state.jobs[key]
        for key, placement in state.placement.items()
        if key[0] == reservation.project and _on(placement, names)
    ]
    room = reservation.gpus * 1000
    for job in sorted(mine, key=lambda j: (j.order, j.name)):
        amount = _milli_on(job, state.placement[job.key], names)
        if amount > room:
            break
        room -= amount
        session.booked.add(job.key)


# ------------------------------------------------------------------- allocate's check (R22.2)


class Bookings:
    """One cycle's reservations as allocate sees them: for each one not over, its stand-in's
    shadow, at T1 for one ahead of its slot (R22.2), now without the preemptible work of other
    projects for one inside it (R22.5). A shadow is built when a start first lands on its
    nodes: a cycle that starts nothing there pays nothing."""

    def __init__(self, session: Session):
        self.session = session
        self.wanted: list[tuple[Reservation, list[NodeState], set[str]]] = []
        for reservation in session.bookings:
            if reservation.end <= session.now or reservation.project not in session.queues:
                continue
            nodes = nodes_for(session, reservation)
            if nodes:
                self.wanted.append((reservation, nodes, {n.name for n in nodes}))
        self.shadows: dict[int, Shadow] = {}

    def _shadow(self, index: int, job: Job, placement: tuple[PodPlacement, ...]) -> Shadow:
        """The reservation's shadow, built from the cluster as it is with `job` (just placed by
        allocate) left out: `check` adds it."""
        if index not in self.shadows:
            reservation, nodes, _ = self.wanted[index]
            shadow = Shadow(reserved_job(reservation, nodes), nodes)
            shadow.change(job, placement, -1)
            self._release(shadow, reservation, job.key)
            self.shadows[index] = shadow
        return self.shadows[index]

    def _release(self, shadow: Shadow, reservation: Reservation, skip) -> None:
        """Take off the shadow what will not be there for the reservation: the project's own
        jobs (inside it), and before the slot what ends by T1, inside it others' preemptible
        work (it gives way, R22.5)."""
        session, state = self.session, self.session.state
        ahead = reservation.start > session.now
        for key, placement in state.placement.items():
            if key == skip or not shadow.touches(placement):
                continue
            job = state.jobs[key]
            if job.project == reservation.project:
                gone = True
            elif ahead:
                end = predicted_end(job, session.now, key in session.touched)
                gone = end is not None and end <= reservation.start
            else:
                gone = job.preemptible
            if gone:
                shadow.change(job, placement, -1)

    def check(self, job: Job, placement: tuple[PodPlacement, ...]) -> tuple[str | None, str]:
        """(why the just placed `job` must not start, or None; words to add to its start
        reason). Another project's job on reserved capacity starts ahead of the slot only if
        it is preemptible and ends by T1, or the stand-in still fits with it (R22.2); inside
        the slot a preemptible one is lent the GPUs, an interactive one needs the stand-in to
        fit with it (R22.5). A refused job's additions to the shadows are undone."""
        notes: list[str] = []
        added: list[Shadow] = []
        now = self.session.now
        end = now + job.expected_s if job.expected_s is not None else None
        for index, (reservation, _, names) in enumerate(self.wanted):
            if job.project == reservation.project or not _on(placement, names):
                continue
            ahead = reservation.start > now
            name = f"{reservation.project}'s reservation {reservation.name!r}"
            if ahead and job.preemptible and end is not None and end <= reservation.start:
                notes.append(
                    f"ends by {moment(end)}, before {name} at {moment(reservation.start)} (R22.2)"
                )
                continue
            if not ahead and job.preemptible:
                notes.append(
                    f"lent GPUs of {name} until {moment(reservation.end)} as preemptible work, "
                    f"given back when {reservation.project} needs them (R22.5)"
                )
                continue
            shadow = self._shadow(index, job, placement)
            shadow.change(job, placement, +1)
            added.append(shadow)
            if not shadow.fits():
                for undo in added:
                    undo.change(job, placement, -1)
                return held_reason(job, reservation, end, ahead), ""
            notes.append(f"uses GPUs {name} does not need (R22.2)")
        return None, "; ".join(notes)


def held_reason(job: Job, reservation: Reservation, end: float | None, ahead: bool) -> str:
    """Why a job that fits now waits for a reservation (R22.2, R22.5)."""
    name = f"{reservation.project}'s reservation {reservation.name!r}"
    if not ahead:
        return (
            f"fits now, but on GPUs {name} holds until {moment(reservation.end)}; only "
            "preemptible work may borrow them (R22.5)"
        )
    prefix = f"fits now, but would still hold GPUs {name} needs at {moment(reservation.start)}: "
    if not job.preemptible:
        return prefix + "an interactive job could not give them back (R7.2, R22.2)"
    if end is None:
        return prefix + "its run time is unknown (R22.2)"
    return prefix + f"it is predicted to end at {moment(end)} (R22.2)"
