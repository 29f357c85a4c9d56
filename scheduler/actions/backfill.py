"""Backfill with reservations (`Policy.backfill`): Allot's rules B1-B6, on top of allocate (R4.4).

KAI's allocate skips any job that does not fit and serves the next one, so a stream of small jobs
can keep a large gang waiting for ever. Backfill gives the first blocked job a *reservation* — the
time predicted ends free enough GPUs for it — and lets later jobs start only when they do not
delay it. The rule book of this feature (cite "(B2)" etc. in reasons, docstrings and tests):

**B1 Reservation.** Allocate walks pending jobs in the usual order (R4.1-R4.4). The first job
that passes its limit and quota checks (R3) but does not fit now gets a reservation: the earliest
predicted time its pods fit. Running jobs on its node pools are released in order of predicted end
— the job's outlook `expected_end` when the snapshot's producer gives one (the predictor's run
time left for a job that has run that long, `Predictor.outlook`; infinite: never ends), else
`started + expected_s`; a job started in this cycle ends at `now + expected_s`; a job past its
predicted end counts as ending *now* (any moment); a job with unknown `expected_s` or `started`
never ends — and after each release time the job is tried against what is then free.
The try counts the pods the free devices hold (per node, whole free devices ÷ devices per pod,
R5.3; per device, ⌊room ÷ fraction⌋, R5.4): exactly what the core's placement (`place_job`)
achieves, since every pod of a job is the same size and each pod placed lowers that count by
one. A job that cannot fit even on its empty pools (R5.3), or not before the last predicted end,
gets no reservation and waits as under KAI; the next blocked job is then considered.

**B2 Backfill.** While a job holds a reservation at time T, a later job whose placement (where
the core's placement puts it now, R5; no other spot is searched) touches the reservation's node
pools may start now only if (a) it is preemptible and predicted to end by T
(`now + expected_s <= T`), or (b) the reserved job still fits at T with this job's GPUs taken —
it uses GPUs the reservation does not need, so the reservation is not delayed (the same as
recomputing the reservation with this job running and getting no later time: taking GPUs can
only make a fit later, and the job itself frees nothing before T). A job with an
unknown run time, or a non-preemptible one (B4 could not evict it if it overran, R7.3), may only
start under (b). Such starts are decisions with action ``backfill``; a job placed wholly outside
every reservation's pools starts as a plain allocate (R4.4).

**B3 Held.** A later job that fits now but meets neither (a) nor (b) is held: it stays pending
with a reason naming the reservation. Reclaim, preempt and consolidation do not take a held job up
in the same cycle: their simulations would place it on the same free GPUs (R5.1 prefers idle
devices). While a reservation stands, consolidation (R11) serves only the reserved job and jobs
ahead of it, as moving running jobs to squeeze in a later job spends free GPUs the reservation
counts on. Reclaim and preempt keep their rules (R9, R10) for every job not held: entitlements
outrank a reservation, which is recomputed next cycle.

**B4 Overrun.** A running backfilled job (`Job.backfilled`) that is preemptible and has overrun
its prediction (`now > started + expected_s`) may be evicted for the job about to be reserved —
but only when that lets it start now. Overrunning backfilled jobs on its pools are released
newest first (latest start) until it fits; if it then fits, it starts in this cycle on the
releasing GPUs (R1.3) and those jobs are evicted, except any whose devices it did not take, which
keep running (as R8.5). Decisions have action ``backfill-reclaim`` and the beneficiary set.
Interactive jobs are never victims (R7.3); the reserved job has passed its limit and quota checks
(R3), which victims leaving only eases. Otherwise nothing is evicted and B1 applies.

**B5 Scope.** One reservation per set of node pools: the first blocked job in order gets one; a
later blocked job gets its own only if its pools share none with an existing reservation's.
Nothing is remembered between cycles — reservations are recomputed from the snapshot every cycle
(the core is pure), so one moves when predictions, ends or the queue change. The reserved job is
the first in KAI's order, which already encodes fair share (R4.1): backfill lets no job ahead of a
fairer one; it only stops later jobs from delaying it. `Plan.reservations` lists each reserved
job's predicted start.

**B6 Shortest predicted first behind a reservation.** Once the first reservation of the cycle
is made, every project's remaining pending jobs are taken in order of priority (R4.3), then
shortest predicted run (unknown last), then age, instead of priority then age; the order between
projects stays fair share (R4.1), recomputed from the new heads. A job that fits before the
reservation is what B2 wants, and among those the shortest frees its GPUs soonest (Tsafrir,
Etsion and Feitelson, "Backfilling using system-generated predictions rather than user runtime
estimates", IEEE TPDS 2007, order backfill candidates the same way). Without a reservation
nothing changes: a cluster with room keeps KAI's order.

**Cost.** Nothing at all without `Policy.backfill`. With it, a reservation is one pass over the
running jobs, one sort of their predicted ends and, per release, a recount of the nodes that job
was on (the :class:`Shadow` of the reserved job's pools at T); each later start then costs a
recount of the nodes it lands on. Reservations that cannot be made are remembered per pool set
and pod size for the rest of the cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..model import Job, PodPlacement
from ..placement import place_job
from ..session import Session, nodes_of
from ..state import FULL, NodeState, pod_milli

# -------------------------------------------------------------------------------- predictions


def predicted_end(job: Job, now: float, started_now: bool = False) -> float | None:
    """When a running job is predicted to end (B1): its outlook `expected_end` when the snapshot
    gives one (None if that is infinite), else `started + expected_s` (`now + expected_s` for a
    job started in this cycle); never before `now` — an overrun job ends any moment — and None
    when its run time or start is unknown (it never ends as far as backfill knows)."""
    if job.expected_end is not None and not started_now:
        return None if math.isinf(job.expected_end) else max(now, job.expected_end)
    if job.expected_s is None:
        return None
    start = now if started_now else job.started
    if start is None:
        return None
    return max(now, start + job.expected_s)


def overran(job: Job, now: float) -> bool:
    """True when a running job has run past its prediction: `now > started + expected_s` (B4)."""
    if job.started is None or job.expected_s is None:
        return False
    return now > job.started + job.expected_s


def moment(t: float) -> str:
    """A time on the snapshot's clock for a reason text: 't=1500' or 't=1500.5'."""
    return f"t={t:.0f}" if float(t).is_integer() else f"t={t:.1f}"


def label(job: Job) -> str:
    """'team-a/big' for a reason text."""
    return f"{job.project}/{job.name}"


def pods_fitting(
    used: list[int], job: Job, cpu: int | None = None, memory: int | None = None,
    device_milli: int | None = None,
) -> int:  # fmt: skip
    """How many more pods of `job` a node with these device loads holds (B1): free whole devices
    ÷ devices per pod for whole-GPU pods (R5.3), Σ ⌊room ÷ fraction⌋ over devices for fractions
    (R5.4; `device_milli` is a GPU-memory pod's share of this node's devices, R5.5), and no more
    than the node's free `cpu` and `memory` hold (None: not tracked; issue 26). Pods of one job
    are all the same size, so each pod the core places lowers this count by exactly one: the
    core's placement fits the job iff the sum over its nodes >= its pods."""
    if job.whole:
        count = sum(1 for u in used if u == 0) // job.whole_devices_per_pod
    else:
        milli = job.milli_per_pod if device_milli is None else device_milli
        if milli > FULL:
            return 0
        count = job.pods if milli <= 0 else sum((FULL - u) // milli for u in used)
    if job.cpu_millis and cpu is not None:
        count = min(count, max(0, cpu) // job.cpu_millis)
    if job.memory_bytes and memory is not None:
        count = min(count, max(0, memory) // job.memory_bytes)
    return count


# -------------------------------------------------------------------------------- the future


class Shadow:
    """Device loads of a job's eligible pool nodes at some future time, with the count of the
    job's pods they hold (B1) kept up to date as jobs are released or added."""

    def __init__(self, job: Job, nodes: list[NodeState]):
        self.job = job
        self.used: dict[str, list[int]] = {n.name: list(n.used) for n in nodes}
        self.cpu = {n.name: n.cpu_free for n in nodes}  # issue 26: None = not tracked
        self.memory = {n.name: n.memory_free for n in nodes}
        self.milli = {n.name: n.device_milli(job) for n in nodes}
        self.caps: dict[str, int] = {name: self._count(name) for name in self.used}
        self.capacity = sum(self.caps.values())

    def _count(self, name: str) -> int:
        return pods_fitting(
            self.used[name], self.job, self.cpu[name], self.memory[name], self.milli[name]
        )

    def fits(self) -> bool:
        """The job's pods all fit on what is free (B1)."""
        return self.capacity >= self.job.pods

    def touches(self, placement: tuple[PodPlacement, ...]) -> bool:
        """Some pod of the placement is on one of these nodes."""
        return any(pod.node in self.used for pod in placement)

    def change(self, job: Job, placement: tuple[PodPlacement, ...], sign: int) -> None:
        """Release (sign -1) or add (+1) a job's pods on these nodes and recount."""
        changed = set()
        for pod in placement:
            used = self.used.get(pod.node)
            if used is None:
                continue
            milli = pod_milli(job, pod) * sign
            for device in pod.devices:
                if device < len(used):
                    used[device] = min(FULL, max(0, used[device] + milli))
            if self.cpu[pod.node] is not None:
                self.cpu[pod.node] -= job.cpu_millis * sign
            if self.memory[pod.node] is not None:
                self.memory[pod.node] -= job.memory_bytes * sign
            changed.add(pod.node)
        for name in changed:
            cap = self._count(name)
            self.capacity += cap - self.caps[name]
            self.caps[name] = cap


@dataclass
class Reservation:
    """A blocked job's predicted start `at` (B1) on its node `pools`; `shadow` is those pools
    at that time, with the jobs backfilled under B2(b) added."""

    job: Job
    at: float
    pools: frozenset[str]
    shadow: Shadow


# -------------------------------------------------------------------------------- the rules


class Backfill:
    """One cycle's reservations and the B1-B4 decisions allocate asks for."""

    def __init__(self, session: Session):
        self.session = session
        self.state = session.state
        self.now = session.now
        self.reservations: list[Reservation] = []
        self.reordered = False  # B6 applied in this cycle
        self.reserved_pools: frozenset[str] = frozenset()  # pools of every reservation (B5)
        self.pools: dict[str, frozenset[str]] = {}  # project -> pools it may use
        self.no_room: dict[tuple, int] = {}  # (pools, gpus) -> fewest pods that found none
        self.empty: dict[tuple, int] = {}  # (pools, gpus) -> pods their empty nodes hold
        # B4 candidates: running backfilled preemptible jobs past their prediction, newest first.
        self.overran = sorted(
            (
                j
                for j in session.jobs
                if j.backfilled and j.preemptible and j.running and overran(j, self.now)
            ),
            key=lambda j: (-(j.started or 0.0), -j.order, j.name),
        )

    # ---------------------------------------------------------------- called by allocate
    def blocked(self, job: Job) -> bool:
        """`job` passed R3 but does not fit now. Start it by B4 or give it a reservation (B1)
        and return True; return False to leave it waiting as under KAI."""
        pools = self.pools_of(job)
        if not pools:
            return False
        if not pools.isdisjoint(self.reserved_pools):
            self.session.behind.add(job.key)  # behind a reservation on its pools (B3, B5)
            return False
        if self._empty_capacity(job, pools) < job.pods:
            return False  # never fits (R5.3): no reservation
        if self._reclaim_overrun(job, pools):
            return True
        shape = (pools, job.gpus, job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes)
        if self.no_room.get(shape, job.pods + 1) <= job.pods:
            return False
        reservation = self._reserve(job, pools)
        if reservation is None:
            self.no_room[shape] = job.pods
            return False
        self.reservations.append(reservation)
        self.reserved_pools |= pools
        self.session.reservations[job.key] = reservation.at
        self.session.reasons[job.key] = reservation_reason(job, reservation.at, self.now)
        return True

    def handled(self, job: Job, placement: tuple[PodPlacement, ...], checkpoint: int) -> bool:
        """`job` was just placed by allocate (state changed since `checkpoint`). If its placement
        touches a reservation's pools, record it as a backfill start (B2) or undo it and hold it
        (B3), and return True; return False for a plain allocate start."""
        touched = [r for r in self.reservations if r.shadow.touches(placement)]
        if not touched:
            return False
        end = self.now + job.expected_s if job.expected_s is not None else None
        why: list[str] = []
        added: list[Reservation] = []
        for reservation in touched:
            if end is not None and job.preemptible and end <= reservation.at:
                why.append(
                    f"ends by {moment(end)} before {label(reservation.job)}'s reservation at "
                    f"{moment(reservation.at)}"
                )
                continue
            reservation.shadow.change(job, placement, +1)
            added.append(reservation)
            if not reservation.shadow.fits():
                for undo in added:
                    undo.shadow.change(job, placement, -1)
                self.state.rollback(checkpoint)
                self.session.held.add(job.key)
                self.session.behind.add(job.key)
                self.session.reasons[job.key] = held_reason(job, reservation, end)
                return True
            why.append(
                f"uses GPUs {label(reservation.job)}'s reservation at {moment(reservation.at)} "
                "does not need"
            )
        self.session.record(
            "start",
            job,
            "backfill",
            f"started on {nodes_of(placement)}: {'; '.join(why)} (B2)",
            placement,
        )
        return True

    # ---------------------------------------------------------------- B1
    def pools_of(self, job: Job) -> frozenset[str]:
        """Names of the pools with eligible nodes the job's project may use (R5)."""
        pools = self.pools.get(job.project)
        if pools is None:
            wanted = self.session.queue(job).node_pools or tuple(self.state.pools)
            pools = self.pools[job.project] = frozenset(p for p in wanted if p in self.state.pools)
        return pools

    def _nodes(self, pools: frozenset[str]) -> list[NodeState]:
        return [
            self.state.nodes[name]
            for pool in sorted(pools)
            for name in sorted(self.state.pools[pool].members)
        ]

    def _empty_capacity(self, job: Job, pools: frozenset[str]) -> int:
        shape = (pools, job.gpus, job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes)
        if shape not in self.empty:
            self.empty[shape] = sum(
                pods_fitting(
                    [FULL if d in n.failed else 0 for d in range(n.gpus)], job,
                    n.cpu_total, n.memory_total, n.device_milli(job),
                )
                for n in self._nodes(pools)
            )  # fmt: skip
        return self.empty[shape]

    def _reserve(self, job: Job, pools: frozenset[str]) -> Reservation | None:
        """Release running jobs on the job's pools in order of predicted end until it fits (B1)."""
        shadow = Shadow(job, self._nodes(pools))
        if shadow.fits():  # cannot happen after place_job failed; kept for safety
            return Reservation(job, self.now, pools, shadow)
        releases = []
        for key, placement in self.state.placement.items():
            running = self.state.jobs[key]
            end = predicted_end(running, self.now, key in self.session.touched)
            if end is not None and shadow.touches(placement):
                releases.append((end, running.order, running.name, key))
        releases.sort()
        index = 0
        while index < len(releases):
            at = releases[index][0]
            while index < len(releases) and releases[index][0] == at:
                key = releases[index][3]
                shadow.change(self.state.jobs[key], self.state.placement[key], -1)
                index += 1
            if shadow.fits():
                return Reservation(job, at, pools, shadow)
        return None

    # ---------------------------------------------------------------- B4
    def _reclaim_overrun(self, job: Job, pools: frozenset[str]) -> bool:
        """Evict overrunning backfilled jobs, newest first, if that lets `job` start now (B4)."""
        nodes = self._nodes(pools)
        names = {n.name for n in nodes}
        candidates = [
            v
            for v in self.overran
            if self.session.alive(v)
            and any(p.node in names for p in self.state.placement.get(v.key, ()))
        ]
        if not candidates:
            return False
        shadow = Shadow(job, nodes)
        victims: list[Job] = []
        for victim in candidates:
            shadow.change(victim, self.state.placement[victim.key], -1)
            victims.append(victim)
            if shadow.fits():
                break
        else:
            return False
        state = self.state
        checkpoint = state.checkpoint()
        old = {v.key: state.unplace(v) for v in victims}
        placement = place_job(state, job, self.session.policy)
        if placement is None:  # the count above says it fits; kept for safety
            state.rollback(checkpoint)
            return False
        evicted = []
        for victim in reversed(victims):  # the oldest keep running if the job left them room
            if still_free(state.nodes, victim, old[victim.key]):
                state.place(victim, old[victim.key])
            else:
                evicted.append(victim)
        for victim in reversed(evicted):
            ended = (victim.started or 0.0) + (victim.expected_s or 0.0)
            self.session.record(
                "evict",
                victim,
                "backfill-reclaim",
                f"evicted: backfilled ahead of {label(job)}, it has overrun its predicted end "
                f"at {moment(ended)} and {label(job)} can start in its place (B4)",
                beneficiary=job.key,
            )
        self.session.record(
            "start",
            job,
            "backfill-reclaim",
            f"started on {nodes_of(placement)} in place of backfilled jobs that overran their "
            "predicted end (B4)",
            placement,
        )
        return True


def still_free(nodes: dict[str, NodeState], job: Job, placement) -> bool:
    """Every device of the placement still has room for the job's share, and every node for
    its pods' CPU and memory (issue 26)."""
    for pod in placement:
        node = nodes.get(pod.node)
        if node is None:
            return False
        for device in pod.devices:
            if device >= node.gpus or node.used[device] + pod_milli(job, pod) > FULL:
                return False
        pods = sum(1 for p in placement if p.node == pod.node)
        if node.cpu_free is not None and job.cpu_millis * pods > node.cpu_free:
            return False
        if node.memory_free is not None and job.memory_bytes * pods > node.memory_free:
            return False
    return True


def reservation_reason(job: Job, at: float, now: float) -> str:
    """Why the reserved job waits (B1)."""
    return (
        f"reserved: predicted ends free room for its {_pods(job)} at {moment(at)} "
        f"(in {at - now:.0f} s); later jobs may only start if they do not delay it (B1)"
    )


def keep_reservation_reasons(session: Session) -> None:
    """After every action: a reserved job still pending is told about its reservation (B1),
    whatever a later action found (reclaim's R9.2 says less about when it will start)."""
    for key, at in session.reservations.items():
        if not session.state.is_running(key):
            session.reasons[key] = reservation_reason(session.state.jobs[key], at, session.now)


def held_reason(job: Job, reservation: Reservation, end: float | None) -> str:
    """Why a job that fits now waits for a reservation (B3)."""
    prefix = (
        f"fits now, but would delay {label(reservation.job)}'s reservation at "
        f"{moment(reservation.at)}: it needs GPUs the reservation needs and"
    )
    if end is None:
        return f"{prefix} its run time is unknown (B3)"
    if not job.preemptible and end <= reservation.at:
        return f"{prefix} an interactive job could not be evicted if it overran (R7.3, B3)"
    return f"{prefix} is predicted to end at {moment(end)} (B3)"


def _pods(job: Job) -> str:
    gpus = f"{job.gpus:g} GPU" + ("" if job.gpus <= 1 else "s")
    return f"{job.pods} pods of {gpus}" if job.pods > 1 else gpus
