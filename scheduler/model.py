"""The scheduler's input and output: frozen dataclasses, no behaviour beyond derived values.

A :class:`Snapshot` is everything one cycle may look at (nodes, projects, departments, jobs with
their current placement); a :class:`Plan` is everything it decided. Both are plain data so the
portal, the simulator and the tests can build and read them without the scheduler's internals.
GPU amounts are floats in the API (0.5 = half a device) and are handled internally in thousandths
of a device (:func:`to_milli`) so that fractions such as 0.6 + 0.4 add up to a whole device exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

JobKey = tuple[str, str]
"""(project, job name): a job's identity."""

MILLI = 1000
TRAIN_PRIORITY = 50  # R7.1 priority class "train"
BUILD_PRIORITY = 100  # R7.1 priority class "build" (interactive)

JobType = Literal["train", "interactive"]

DEFAULT_BANDS = (1.0, 10.0)
"""Allot's default service bands (L1), GPU-hours: band 0 below 1, band 1 below 10, then band 2."""


def to_milli(gpus: float) -> int:
    """GPUs as an integer count of thousandths of a device (0.6 -> 600)."""
    return round(gpus * MILLI)


def from_milli(milli: int) -> float:
    """Thousandths of a device back to GPUs, rounded to the thousandth."""
    return round(milli / MILLI, 3)


@dataclass(frozen=True)
class Node:
    """A node: `gpus` identical devices of `gpu_memory_bytes` each, in node pool `pool`.

    A node that is not `ready` contributes nothing to the cluster total (R2.6) and takes no pods;
    a `schedulable=False` (cordoned) node keeps its running pods and counts in the total but takes
    no new pods.

    `cpu_millis` and `memory_bytes` are the node's allocatable CPU (millicores) and memory (bytes);
    None means not tracked, so that resource never limits what the node takes (issue 26).
    `failed_devices` are indexes of GPUs the device plugin or an admin marked failed: nothing is
    placed on them, they do not count in the cluster total (R2.6), and a job running on one is
    evicted by the next cycle (scheduler/actions/failed.py).

    `outside_devices`, `outside_cpu_millis` and `outside_memory_bytes` are what pods Allot did not
    place hold here (other schedulers, DaemonSets, static pods; issue 33): those devices take
    nothing and, as failed ones, leave the cluster total (R2.6: "minus resources of pods run by
    other schedulers"); that CPU and memory are not free. Nothing is evicted for them.

    `labels` are the node's Kubernetes labels as (key, value) pairs; the topology levels of its
    pool (`Snapshot.topology`) name which of them group nodes into domains (R23.1,
    docs/topology.md). Other labels are carried and ignored.
    """

    name: str
    gpus: int
    gpu_memory_bytes: int = 32 * 2**30
    pool: str = "default"
    ready: bool = True
    schedulable: bool = True
    cpu_millis: int | None = None
    memory_bytes: int | None = None
    failed_devices: tuple[int, ...] = ()
    outside_devices: tuple[int, ...] = ()
    outside_cpu_millis: int = 0
    outside_memory_bytes: int = 0
    labels: tuple[tuple[str, str], ...] = ()

    def label(self, key: str) -> str | None:
        """The value of label `key`, or None when the node does not carry it."""
        for name, value in self.labels:
            if name == key:
                return value
        return None

    @property
    def healthy_gpus(self) -> int:
        """Devices neither failed nor held by pods Allot did not place (what a ready node gives
        the cluster total, R2.6)."""
        taken = {*self.failed_devices, *self.outside_devices}
        return self.gpus - len({d for d in taken if 0 <= d < self.gpus})


@dataclass(frozen=True)
class Department:
    """A parent queue (R2.11): its fair share is what its projects divide among themselves.

    `over_quota_weight=None` means the quota itself (Run:AI convention, docs/rules.md §13);
    `limit=None` means no limit (KAI's -1). `priority` is the queue priority of R2.8 / R4.1.3.
    `order` is the creation order used by the oldest-queue tie-breaks (R2.10, R4.1.8).
    `reclaim_min_runtime_s` and `preempt_min_runtime_s` protect its jobs for that many seconds
    after they start (R7.4, scheduler/minruntime.py): None inherits, 0 protects nothing, -1 for
    ever. `cpu_limit_millis` and `memory_limit_bytes` cap the CPU and memory the running jobs of all
    its projects may hold together, checked with every project's own (R3.1 on every queue of the
    path, as `limit`); None means no limit (issue 26).
    """

    name: str
    quota: float
    over_quota_weight: float | None = None
    limit: float | None = None
    priority: int = 100
    order: int = 0
    reclaim_min_runtime_s: float | None = None
    preempt_min_runtime_s: float | None = None
    cpu_limit_millis: int | None = None
    memory_limit_bytes: int | None = None


@dataclass(frozen=True)
class Project:
    """A leaf queue: a team's guaranteed `quota`, over-quota weight, limit and node pools.

    Semantics as :class:`Department`; `node_pools=()` means any pool; `department=None` puts the
    project at the top level. `cpu_limit_millis` and `memory_limit_bytes` cap the CPU and memory its
    running jobs may hold together, as `limit` caps GPUs (R3.1); None means no limit. Fair share
    stays in GPUs, as in Run:AI (issue 26).

    `user_fair_share` divides the project's fair share among its active users (issue 36,
    R21.4-R21.8, docs/user-fairness.md): off by default, and then nothing is counted per user.
    `user_weights` are `(user, weight)` pairs for that division; a user not listed weighs 1.
    """

    name: str
    quota: float
    over_quota_weight: float | None = None
    limit: float | None = None
    node_pools: tuple[str, ...] = ()
    department: str | None = None
    priority: int = 100
    order: int = 0
    reclaim_min_runtime_s: float | None = None
    preempt_min_runtime_s: float | None = None
    cpu_limit_millis: int | None = None
    memory_limit_bytes: int | None = None
    user_limits: tuple[UserLimit, ...] = ()
    user_fair_share: bool = False
    user_weights: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class UserLimit:
    """A per-user limit inside a project (issue 36, R21.1-R21.3, docs/user-fairness.md).

    `user=""` is the project default for every user; an entry naming a user overrides it for
    that user field by field (a None field falls back to the default). `max_gpus` caps the GPUs
    one user's running jobs hold in the project, `max_running` their running jobs and
    `max_interactive` their running interactive sessions; None means no limit. A pending-jobs
    limit does not belong here: a pending job holds nothing the core could hand to a teammate,
    so it is a submit-time check (docs/user-fairness.md; not built yet).
    """

    user: str = ""
    max_gpus: float | None = None
    max_running: int | None = None
    max_interactive: int | None = None


@dataclass(frozen=True)
class PodPlacement:
    """Where one pod runs: a node, the device indexes it holds and the share of each device.

    A whole-GPU pod holds `len(devices)` devices with `share=1.0`; a fractional pod holds one
    device with `share` < 1 (R5.3, R5.4). A CPU-only pod has no devices.
    """

    node: str
    devices: tuple[int, ...] = ()
    share: float = 1.0


@dataclass(frozen=True)
class Job:
    """A job of `pods` pods, each asking for `gpus` GPUs (a fraction below 1 or a whole number).

    `type` is ``"train"`` (preemptible, priority 50 + `priority`) or ``"interactive"``
    (non-preemptible build class, priority 100 + `priority`), docs/rules.md §13 and R7.
    `order` is the submission order (smaller is older); an evicted job keeps it. `placement` is
    empty for a pending job and has one entry per pod for a running one (gangs are all or nothing,
    R6.1). `user` and `image` are carried for reasons and predictions; the rules ignore them.
    A running gang that has lost pods (fewer placements than `pods`) carries `degraded_since`,
    the time (on the snapshot's clock) it was first seen so, for stale gang eviction (R6.4).

    For backfill (Allot's B rules, `Policy.backfill`): `started` is when a running job started
    (snapshot clock), `expected_s` its predicted run time in seconds (None: unknown, so it never
    ends as far as a reservation is concerned), and `backfilled` marks a job started ahead of a
    reservation, which may be preempted for the reserved job once it overruns its prediction.
    `expected_end` is the producer's current outlook of when a running job ends (snapshot clock;
    `scheduler.predict.Predictor.outlook`, which knows how long it has run), or `math.inf` when
    it has outlived every job like it: when set, a reservation counts on it instead of
    `started + expected_s` (B1). `expected_s` stays what B2 and B4 judge an overrun by.

    For service bands (Allot's L rules, `Policy.service_bands`, scheduler/bands.py):
    `attained_gpu_s` is the GPU-seconds the job has held over all its runs so far (the snapshot's
    producer adds them up; evictions do not reset it). `band` is derived by the core when the
    cycle opens (L1) — a value given in the snapshot is replaced — and is 0 without bands.

    Other resources, per pod like `gpus` (issue 26): `cpu_millis` (millicores) and `memory_bytes`
    (bytes) the pod requests on its node (0: none). A CPU-only job has `gpus == 0` and never holds a
    GPU. `gpu_memory_bytes` is a fractional request by memory (R3.4, R5.5): the pod goes on one
    device with that much memory free, and `gpus` is then the producer's fraction for accounting,
    gpu_memory_bytes over the smallest device memory in the cluster (scheduler_tools/scenario.py
    and the portal compute it so).

    Budgets (Allot's R20 rules, docs/budgets.md, scheduler/budgets.py): the producer sets
    `budget_hold` to the reason when a hard budget of the job's scope that says "wait" is spent
    (R20.2: the job waits with it), and `over_budget` to the reason when a spent hard budget
    lets its jobs run as preemptible over-quota work (R20.3, R20.4). None: within budget.

    Topology (R23, docs/topology.md): `topology_required` names a level of its pools' topology
    (a node label key, or its short name after the last "/") inside one domain of which every
    pod must run, or the job waits (R23.2); `topology_preferred` names the level it is packed
    into when it can be, falling back one level up at a time (R23.3). None: anywhere (R5).
    """

    project: str
    name: str
    gpus: float
    pods: int = 1
    type: JobType = "train"
    priority: int | None = None
    order: int = 0
    placement: tuple[PodPlacement, ...] = ()
    user: str = ""
    image: str = ""
    degraded_since: float | None = None
    started: float | None = None
    expected_s: float | None = None
    expected_end: float | None = None
    backfilled: bool = False
    attained_gpu_s: float = 0.0
    band: int = 0
    cpu_millis: int = 0
    memory_bytes: int = 0
    gpu_memory_bytes: int | None = None
    budget_hold: str | None = None
    over_budget: str | None = None
    topology_required: str | None = None
    topology_preferred: str | None = None

    # The derived values below are read millions of times per simulated day; a job is
    # immutable, so each is computed once (cached_property stores it beside the fields, which
    # equality, hashing and dataclasses.replace ignore).
    @cached_property
    def key(self) -> JobKey:
        """(project, name)."""
        return (self.project, self.name)

    @property
    def running(self) -> bool:
        """True when the job holds a placement (it is not pending)."""
        return bool(self.placement)

    @cached_property
    def priority_value(self) -> int:
        """The priority-class value of R7.1 / §13: train 50 + p, interactive 100 + p."""
        base = BUILD_PRIORITY if self.type == "interactive" else TRAIN_PRIORITY
        return base + (self.priority or 0)

    @cached_property
    def rank(self) -> tuple[int, int]:
        """What "higher priority" compares (R4.3, R8.1, R10.2): the priority-class value, then
        the lower service band (L2; every job is in band 0 without `Policy.service_bands`)."""
        return (self.priority_value, -self.band)

    @cached_property
    def preemptible(self) -> bool:
        """Train jobs are preemptible, interactive ones are not (R7.2, §13)."""
        return self.type == "train"

    @cached_property
    def milli_per_pod(self) -> int:
        """GPUs of one pod in thousandths of a device."""
        return to_milli(self.gpus)

    @cached_property
    def milli_total(self) -> int:
        """GPUs of the whole job in thousandths of a device."""
        return self.milli_per_pod * self.pods

    @cached_property
    def whole(self) -> bool:
        """True for a pod of whole devices (R5.3); fractions, GPU-memory requests (always one
        shared device, R5.5) and CPU-only pods are not."""
        return self.gpus >= 1 and self.gpu_memory_bytes is None

    @cached_property
    def whole_devices_per_pod(self) -> int:
        """Devices a whole-GPU pod needs (0 for a fractional or CPU-only pod)."""
        return int(self.gpus) if self.whole else 0

    @cached_property
    def shared(self) -> bool:
        """True for a pod that takes part of one device: a fraction (R5.4) or GPU memory (R5.5)."""
        return self.gpu_memory_bytes is not None or 0 < self.gpus < 1


@dataclass(frozen=True)
class Policy:
    """How a cycle decides, beyond the rules themselves.

    - `gpu_placement`: ``"binpack"`` (R5.2 default, fullest node first) or ``"spread"``.
    - `gpu_sharing`: ``"pack"`` (R5.4 default, fullest shared device first) or ``"spread"``.
    - `consolidation`, `reclaim`, `preempt`: switch those actions (R1.1) on or off.
    - `victim_order`: ``"newest"`` (KAI, R8.1: newest job of the most over-served project first)
      or ``"smallest_sufficient"`` (Allot's improvement on E5: within a victim project, prefer the
      smallest job that alone covers the demand; otherwise KAI's order). Off by default.
    - `k_value`: time-based fair share factor of R2.9; `usage` in the snapshot feeds it.
    - `saturation_multiplier`: R9.5; values below 1 are treated as 1.
    - `max_consolidation_preemptees`: R11.1.
    - `max_reclaim_candidates`: None (the default) lets reclaim and preempt search every victim
      candidate (R8.2-R8.5); a number stops each job's search after that many, as R11.1 does
      for consolidation. A failing search simulates growing scenarios over every candidate,
      O(n^2) placements, which took the what-if (scheduler/whatif.py) over an hour at 4,000
      jobs; the what-if bounds it.
    - `consolidation_candidates`: ``"node_first"`` (Allot's improvement E11, the default: a
      pending job is offered the occupants of the nodes cheapest to empty, every resource
      counted) or
      ``"victim_queue"`` (KAI: the first jobs of the R8.1 victim queue, wherever they run).
    - `allow_consolidating_reclaim`: R9.7.
    - `staleness_grace_s`: R6.4, how long a gang may run below its pod count (negative = never).
    - `backfill`: Allot's B rules: when the first job in order cannot start, reserve GPUs for it at
      the earliest time predicted ends free them, and start later jobs only when they do not
      delay that reservation. Off by default (KAI has no reservations).
    - `service_bands`: Allot's L rules (scheduler/bands.py): ascending thresholds in GPU-hours of
      attained service; inside a project, among jobs of one priority class, a preemptible job
      that has held fewer GPU-hours is served first, and a reclaim or preemption takes the one
      that has held more first (L2, after Tiresias's discretised least-attained-service).
      Allot's default is 1 and 10 GPU-hours (`DEFAULT_BANDS`, docs/simulation.md §9.9); ``()``
      gives KAI's own order (priority, then age).
    - `band_preemption`: with service bands, whether a job of a lower band also preempts its own
      project's jobs of the same class in a higher band (L3). Off by default: bands then only
      order a project's jobs, and nothing is evicted that KAI would not evict.
    - `reclaim_min_runtime_s`, `preempt_min_runtime_s`: the cluster defaults of R7.4 (KAI's
      ``minruntime`` plugin arguments): seconds after its start during which a job may not be
      taken by reclaim or by preemption, unless its project or department says otherwise; 0
      (KAI's default) protects nothing, -1 protects for ever.
    """

    gpu_placement: Literal["binpack", "spread"] = "binpack"
    gpu_sharing: Literal["pack", "spread"] = "pack"
    consolidation: bool = True
    reclaim: bool = True
    preempt: bool = True
    victim_order: Literal["newest", "smallest_sufficient"] = "newest"
    k_value: float = 1.0
    saturation_multiplier: float = 1.0
    max_consolidation_preemptees: int = 16
    max_reclaim_candidates: int | None = None
    consolidation_candidates: Literal["node_first", "victim_queue"] = "node_first"
    allow_consolidating_reclaim: bool = True
    staleness_grace_s: float = 60.0
    backfill: bool = False
    service_bands: tuple[float, ...] = DEFAULT_BANDS
    band_preemption: bool = False
    reclaim_min_runtime_s: float = 0.0
    preempt_min_runtime_s: float = 0.0


@dataclass(frozen=True)
class Reservation:
    """GPUs booked ahead for a project from `start` to `end` (Allot's R22 rules,
    docs/reservations.md, scheduler/reservations.py): one occurrence, on the snapshot's clock.

    `gpus` whole devices (an integer of at least 1), optionally `cpu_millis` and `memory_bytes`
    in all (None: not booked; spread evenly over the GPUs), on node pool `pool` (None: every
    pool the project may use) and, with `whole_nodes`, as whole nodes of that pool (R22.1). A
    weekly booking reaches the core as one Reservation per week (the producer expands it,
    `scheduler.reservations.weekly`); `name` names the booking in reasons.
    """

    name: str
    project: str
    gpus: int
    start: float
    end: float
    pool: str | None = None
    whole_nodes: bool = False
    cpu_millis: int | None = None
    memory_bytes: int | None = None

    def active(self, now: float) -> bool:
        """True inside the slot, `start <= now < end` (R22.3-R22.5)."""
        return self.start <= now < self.end


@dataclass(frozen=True)
class Snapshot:
    """Everything one cycle sees. `now` is seconds on any clock the caller likes.

    `usage` maps a queue (project or department) name to its normalised historical GPU usage
    (0..1 of the cluster) for time-based fair share (R2.9, E10); empty means no usage data.
    `topology` maps a node pool to its topology levels, node label keys from the widest domain
    to the narrowest (e.g. block, rack, kubernetes.io/hostname; R23.1); a pool not listed has
    none (a job requiring a level waits, R23.4; a preference there places it anywhere).
    `reservations` are the booked occurrences not yet over (R22, docs/reservations.md).
    """

    nodes: tuple[Node, ...]
    projects: tuple[Project, ...]
    jobs: tuple[Job, ...] = ()
    departments: tuple[Department, ...] = ()
    now: float = 0.0
    usage: dict[str, float] = field(default_factory=dict)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reservations: tuple[Reservation, ...] = ()


DecisionKind = Literal["start", "evict", "move"]


@dataclass(frozen=True)
class Decision:
    """One thing the plan does to one job.

    - ``start``: the pending job starts with `placement` (one entry per pod).
    - ``evict``: the running job is stopped and returns to Pending, keeping its `order`.
    - ``move``: the running job is restarted with the new `placement` (consolidation, R8.5).

    `action` names the action that decided (allocate, consolidation, reclaim, preempt),
    `beneficiary` the pending job an eviction or move made room for, and `reason` says why in
    plain words, ending with the rule it applies, e.g. "(R9.4)".

    With `Policy.backfill` two more actions appear: ``backfill`` (a job started ahead of a
    reservation, B2) and ``backfill-reclaim`` (an overrunning backfilled job evicted, and the
    reserved job started, B4); their reasons cite Allot's B rules (scheduler/actions/backfill.py).
    """

    kind: DecisionKind
    job: JobKey
    action: str
    reason: str
    placement: tuple[PodPlacement, ...] = ()
    beneficiary: JobKey | None = None


@dataclass(frozen=True)
class Plan:
    """A cycle's result: decisions in the order they were made, fair shares, pending reasons.

    `fair_shares` maps every project and department name to its fair share in GPUs (R2).
    `pending_reasons` maps every job still pending after the plan to the first rule that blocked
    it, in plain words. `allocated` is each project's GPUs after the plan.
    `reservations` maps each job still pending with a backfill reservation (B1, B5) to the
    predicted time it starts, on the snapshot's clock; empty without `Policy.backfill`.
    `user_fair_shares` maps each project with user fair share to its active users' fair shares
    in GPUs (R21.4); empty when no project has it on.
    """

    decisions: tuple[Decision, ...]
    fair_shares: dict[str, float]
    pending_reasons: dict[JobKey, str]
    allocated: dict[str, float] = field(default_factory=dict)
    reservations: dict[JobKey, float] = field(default_factory=dict)
    user_fair_shares: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """True when the cycle decided nothing (the cluster has settled, R1.3)."""
        return not self.decisions
