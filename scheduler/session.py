"""One cycle's working state: queues with fair shares, the cluster, decisions and reasons.

Fair shares are computed once when the session opens (R1.2); allocated counters then move with
every placement and eviction. Actions read and change the session; :meth:`Session.plan` turns it
into the immutable :class:`~scheduler.model.Plan`.
"""

from __future__ import annotations

from functools import lru_cache

from .bands import check_bands, with_bands
from .budgets import budget_block
from .minruntime import Protection, check_min_runtime, check_policy
from .model import Decision, Job, JobKey, Plan, PodPlacement, Policy, Snapshot, from_milli, to_milli
from .ordering import ActionVictims
from .quantity import cores_text, memory_text
from .queues import QueueState, add_user_queues, build_queues, compute_fair_shares, leaf_of
from .reservations import check_bookings
from .state import ClusterState
from .userlimits import user_limit_block


@lru_cache(maxsize=4096)
def gpus(milli: int | None) -> str:
    """Thousandths of a GPU in plain words: 2000 -> '2 GPUs', 500 -> '0.5 GPU'."""
    if milli is None:
        return "unlimited GPUs"
    value = from_milli(milli)
    text = f"{value:g}"
    return f"{text} GPU" if value <= 1 else f"{text} GPUs"


class Session:
    """The state every action of one cycle shares."""

    def __init__(self, snapshot: Snapshot, policy: Policy):
        self.policy = policy
        self.now = snapshot.now
        self.queues: dict[str, QueueState] = build_queues(snapshot)
        check_policy(policy)
        for spec in (*snapshot.departments, *snapshot.projects):
            check_min_runtime(spec.reclaim_min_runtime_s, f"{spec.name}: reclaim_min_runtime_s")
            check_min_runtime(spec.preempt_min_runtime_s, f"{spec.name}: preempt_min_runtime_s")
        self.protection = Protection(self.queues, policy, snapshot.now)  # R7.4
        jobs = [j for j in snapshot.jobs if j.project in self.queues and j.milli_per_pod >= 0]
        if policy.service_bands:
            check_bands(policy.service_bands)
        if policy.service_bands or any(j.band for j in jobs):
            jobs = with_bands(jobs, policy)  # L1
        if len({j.key for j in jobs}) != len(jobs):
            raise ValueError("the snapshot holds two jobs with the same project and name")
        # R2.6: ready nodes' devices, failed ones left out (issue 26).
        self.total = sum(to_milli(n.healthy_gpus) for n in snapshot.nodes if n.ready)
        # R3.4: a GPU-memory request's fraction for the limit check uses the largest device.
        self.largest_gpu_memory = max((n.gpu_memory_bytes for n in snapshot.nodes), default=0)
        add_user_queues(self.queues, snapshot.projects, jobs)  # R21.4
        compute_fair_shares(self.queues, jobs, self.total, snapshot.usage, policy.k_value)
        self.state = ClusterState(snapshot.nodes, self.queues, jobs, snapshot.topology)
        self.nodes = {n.name: n for n in snapshot.nodes}
        # Projects with per-user limits (R21.1-R21.3); the others are never counted per user.
        self.user_limited = {p.name: p for p in snapshot.projects if p.user_limits}
        self.jobs = jobs
        self.decisions: list[Decision] = []
        self.touched: set[JobKey] = set()  # started, evicted or moved in this cycle
        self.reasons: dict[JobKey, str] = {}
        # Blocked by a limit or quota (R3), or too large for every node (resources.unplaceable),
        # not by room: no later action's reason replaces theirs.
        self.hard_blocked: set[JobKey] = set()
        self.fit_reasons: dict[tuple, str | None] = {}  # job shape -> resource reason (issue 26)
        self.never_fits: dict[tuple, str | None] = {}  # job shape -> why no node ever holds it
        # Backfill (Policy.backfill, scheduler/actions/backfill.py); all empty without it.
        self.reservations: dict[JobKey, float] = {}  # reserved job -> predicted start (B1)
        self.held: set[JobKey] = set()  # fit now but would delay a reservation (B3)
        self.behind: set[JobKey] = set()  # not started, after a reservation on their pools (B3)
        self.withheld: set[JobKey] = set()  # pending jobs the current action may not take up
        # Reservations (R22, scheduler/actions/booking.py); both empty without them.
        self.bookings = check_bookings(snapshot.reservations)
        self.booked: set[JobKey] = set()  # on reserved capacity: no other action's victims (R22.4)

    # ------------------------------------------------------------------ what actions look at
    def pending(self) -> list[Job]:
        """Jobs waiting for GPUs; jobs evicted in this cycle are still releasing (R1.3), and jobs
        backfill withholds from the current action are left out (B3; none without backfill)."""
        return [
            j
            for j in self.jobs
            if not self.state.is_running(j.key)
            and j.key not in self.touched
            and j.key not in self.withheld
        ]

    def running_untouched(self) -> list[Job]:
        """Jobs running since before this cycle and not moved or evicted in it."""
        return [j for j in self.jobs if self.state.is_running(j.key) and j.key not in self.touched]

    def alive(self, job: Job) -> bool:
        """Still running and not yet moved or evicted in this cycle: a possible victim."""
        return job.key not in self.touched and self.state.is_running(job.key)

    def victims(self) -> ActionVictims:
        """Running preemptible jobs grouped for one action's victim searches (R8.1), less the
        jobs a reservation keeps in its slot (R22.4)."""
        return ActionVictims(
            [j for j in self.running_untouched() if j.key not in self.booked],  # R22.4
            self.queues,
            self.total,
            self.alive,
            smallest_sufficient=self.policy.victim_order == "smallest_sufficient",
        )

    def queue(self, job: Job) -> QueueState:
        """The job's project."""
        return self.queues[job.project]

    def leaf(self, job: Job) -> QueueState:
        """The queue the job's GPUs count in and its fair share is judged by: its user's inside
        a project with user fair share (R21.4), else its project."""
        return leaf_of(self.queues, job)

    def explain(self, job: Job, reason: str | None) -> None:
        """Give a pending job a more telling reason than "no idle GPUs", unless a limit or
        quota (R3), or a node too small for it whatever runs there, already explains why it waits
        (that reason stays)."""
        if reason and job.key not in self.hard_blocked:
            self.reasons[job.key] = reason

    # ------------------------------------------------------------------ capacity checks (R3)
    def limit_amount(self, job: Job) -> int:
        """The job's GPUs for the limit check (R3.1) in thousandths: a GPU-memory request counts
        as its memory over the largest device memory in the cluster, the most lenient (R3.4)."""
        if job.gpu_memory_bytes is None or not self.largest_gpu_memory:
            return job.milli_total
        return to_milli(job.gpu_memory_bytes / self.largest_gpu_memory) * job.pods

    def capacity_block(self, job: Job) -> str | None:
        """Why the job cannot be placed right now: a spent hard budget first (R20.2, R20.3),
        then its user's limits in its project (R21.1-R21.3, issue 36), its project's and
        ancestors' limit (R3.1, in GPUs, and the project's CPU and memory limits of issue 26) and,
        for a non-preemptible job, quota (R3.2); None when it may be placed."""
        spent = budget_block(job)  # R20.2, R20.3
        if spent:
            return spent
        amount = job.milli_total
        limited = self.limit_amount(job)
        project = self.user_limited.get(job.project)
        if project is not None:
            held = self.state.user_held.get((job.project, job.user), (0, 0, 0))
            running = self.state.is_running(job.key)
            over = user_limit_block(project, job, held, running, limited)
            if over:
                return over
        for queue in self.queue(job).path()[::-1]:
            over = resource_limit_block(queue, job)
            if over:
                return over
            if queue.limit is not None and queue.allocated + limited > queue.limit:
                return (
                    f"would exceed {queue.name}'s limit of {gpus(queue.limit)}: "
                    f"{gpus(queue.allocated)} in use + {gpus(limited)} requested (R3.1)"
                )
            if (
                not job.preemptible
                and queue.deserved is not None
                and queue.allocated_np + amount > queue.deserved
            ):
                return (
                    f"interactive jobs of {queue.name} would exceed its quota of "
                    f"{gpus(queue.deserved)}: {gpus(queue.allocated_np)} in use + "
                    f"{gpus(amount)} requested (R3.2)"
                )
        return None

    # ------------------------------------------------------------------ recording
    def record(self, kind: str, job: Job, action: str, reason: str, placement=(), beneficiary=None):
        """Append a decision and mark the job as handled in this cycle."""
        self.decisions.append(
            Decision(kind, job.key, action, reason, tuple(placement), beneficiary)
        )
        self.touched.add(job.key)
        if kind != "evict":
            self.reasons.pop(job.key, None)

    def plan(self) -> Plan:
        """The immutable result of the cycle."""
        fair, allocated = {}, {}
        users: dict[str, dict[str, float]] = {}
        for name, q in self.queues.items():
            if q.user is None:
                fair[name] = from_milli(q.fair_share)
                allocated[name] = from_milli(q.allocated)
            else:  # R21.4
                users.setdefault(q.parent.name, {})[q.user] = from_milli(q.fair_share)
        reasons = {}
        for job in self.jobs:
            if not self.state.is_running(job.key):
                reasons[job.key] = self.reasons.get(job.key) or self.default_reason(job)
        reservations = {
            key: at for key, at in self.reservations.items() if not self.state.is_running(key)
        }
        return Plan(tuple(self.decisions), fair, reasons, allocated, reservations, users)

    def default_reason(self, job: Job) -> str:
        """Reason for a job no action looked at (evicted in this cycle, or never reached)."""
        if job.key in self.touched:
            return "evicted in this cycle; waits for its GPUs to be released (R1.3)"
        return "waiting for its turn in the queue (R4.4)"


def resource_limit_block(queue: QueueState, job: Job) -> str | None:
    """'over limit' naming the resource when the job's CPU or memory would take the queue past
    its CPU or memory limit (R3.1 for the resources of issue 26), else None."""
    cpu, memory = job.cpu_millis * job.pods, job.memory_bytes * job.pods
    if cpu and queue.cpu_limit is not None and queue.allocated_cpu + cpu > queue.cpu_limit:
        return (
            f"over limit: would exceed {queue.name}'s CPU limit of {cores_text(queue.cpu_limit)}"
            f": {cores_text(queue.allocated_cpu)} in use + {cores_text(cpu)} requested (R3.1)"
        )
    limit = queue.memory_limit
    if memory and limit is not None and queue.allocated_memory + memory > limit:
        return (
            f"over limit: would exceed {queue.name}'s memory limit of {memory_text(limit)}: "
            f"{memory_text(queue.allocated_memory)} in use + {memory_text(memory)} requested "
            "(R3.1)"
        )
    return None


def nodes_of(placement: tuple[PodPlacement, ...]) -> str:
    """'dgx1-1' or 'dgx1-1, dgx1-2' for a reason text."""
    return ", ".join(dict.fromkeys(p.node for p in placement))
