"""What a change to the cluster would do before it is made (issue 37, "what-if").

:func:`what_if` runs the scheduler forward from one snapshot twice, as it is and with a list of
changes applied: a project's quota, over-quota weight or limit (:class:`ProjectChange`), a node
cordoned, drained, uncordoned or removed (:class:`NodeChange`), a node added (:class:`AddNode`),
a job submitted (:class:`AddJob`), a reservation booked (:class:`AddReservation`). Each run is
one full cycle settled at the snapshot's clock (`cycle.settle`, every action on: what the
portal's next cycles would do now, reclaim and preemption included) followed by the ETA's
forward simulation (`eta.estimate_starts`: running jobs end at their predicted ends, no new
arrivals, allocate and backfill only). The two runs give each pending job its expected start
before and after, each project's GPUs over time, and the running jobs the change would stop now:
those the changed run evicts and the unchanged one keeps (a drained or removed node's jobs among
them).

Pure and deterministic: the snapshot's clock is the only time it knows. Forward runs are kept
for their whole input (:func:`cached_forecast`), so the "before" of one state runs once however
many changes are previewed on it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from .cycle import settle
from .eta import estimate_starts, resolution_for
from .model import Job, JobKey, Node, Policy, Reservation, Snapshot

NodeAction = Literal["cordon", "drain", "uncordon", "remove"]
PROJECT_FIELDS = ("quota", "over_quota_weight", "limit")
STEPS = 20  # clock steps of the forward runs (eta.resolution_for): the 2 s budget at 4,000 jobs
MAX_STEPS = 100  # at most: a step never shorter than horizon / MAX_STEPS (short ends, long horizon)
VICTIM_CANDIDATES = 16  # each reclaim/preempt search stops after this many victims (R11.1's cap)
CACHED_FORECASTS = 8  # forward runs kept (the "before" of the states previewed last)


@dataclass(frozen=True)
class ProjectChange:
    """New values for some of a project's `quota`, `over_quota_weight` and `limit` (GPUs; a
    None weight is the quota itself and a None limit is none, as in `model.Project`)."""

    project: str
    values: dict[str, float | None]


@dataclass(frozen=True)
class NodeChange:
    """`cordon`: the node takes no new pods, its jobs run on; `drain`: cordoned and its jobs
    stopped now (back to Pending, as `kubectl drain` evicts them); `uncordon`: it takes pods
    again; `remove`: the node leaves the cluster and its jobs are stopped now."""

    node: str
    action: NodeAction


@dataclass(frozen=True)
class AddNode:
    """A node joining the cluster."""

    node: Node


@dataclass(frozen=True)
class AddJob:
    """A job submitted now; it queues behind every job already there (the newest order)."""

    job: Job


@dataclass(frozen=True)
class AddReservation:
    """One occurrence of a booking not made yet (R22): from its start the scheduler holds its
    GPUs for its project, and ahead of it starts there only work predicted to end in time, so
    the preview shows whom the booking delays."""

    reservation: Reservation


Change = ProjectChange | NodeChange | AddNode | AddJob | AddReservation

DRAIN_REASON = "stopped: its node {node} is {verb} (what-if)"


@dataclass(frozen=True)
class Forecast:
    """One forward run: `starts` maps every job pending after the cycles at the snapshot's clock
    (and those started by them, at that clock) to its expected start, None when the run cannot
    tell within the horizon; `series` is (time, GPUs held per project) at every clock step;
    `stopped` maps each running job the run stops at the snapshot's clock to the reason."""

    starts: dict[JobKey, float | None]
    series: tuple[tuple[float, dict[str, float]], ...]
    stopped: dict[JobKey, str] = field(default_factory=dict)


@dataclass(frozen=True)
class WhatIf:
    """Both runs and what the change would stop now (`stopped`: in `after.stopped` but not in
    `before.stopped`, with the reason the changed run gives)."""

    now: float
    before: Forecast
    after: Forecast
    stopped: dict[JobKey, str]


def what_if(
    snapshot: Snapshot,
    changes: list[Change],
    policy: Policy | None = None,
    horizon_s: float = 2 * 86400.0,
) -> WhatIf:
    """Run the scheduler forward from `snapshot` without and with `changes` (applied in order,
    :func:`apply_changes`) up to `horizon_s` seconds ahead; see the module's docstring. Raises
    ValueError naming a project, node or job a change refers to that the snapshot lacks (or a
    job or node that is there already, or a negative quota, weight or limit).

    Bounded, as a preview must answer in seconds: each reclaim or preempt search tries at most
    `VICTIM_CANDIDATES` victims (`Policy.max_reclaim_candidates`; unbounded, one failing search
    simulated O(n^2) placements and a quota raise at 4,000 jobs ran 4,930 s), and the forward
    run takes at most about `MAX_STEPS` clock steps over the horizon."""
    policy = replace(policy or Policy(), max_reclaim_candidates=VICTIM_CANDIDATES)
    changed, displaced = apply_changes(snapshot, changes)
    before = cached_forecast(snapshot, {}, policy, horizon_s)
    after = cached_forecast(changed, displaced, policy, horizon_s)
    stopped = {key: why for key, why in after.stopped.items() if key not in before.stopped}
    return WhatIf(snapshot.now, before, after, stopped)


_forecasts: OrderedDict[tuple, Forecast] = OrderedDict()
_forecasts_lock = threading.Lock()


def cached_forecast(
    snapshot: Snapshot, displaced: dict[JobKey, str], policy: Policy, horizon_s: float
) -> Forecast:
    """:func:`forecast`, kept for the last `CACHED_FORECASTS` inputs. The "before" run does not
    depend on the change, so previews of different changes on one state (an admin trying a
    quota of 8, then 12) share it and each costs one forward run instead of two. The key is the
    whole input, the snapshot's every field (its clock, each job and node) with the policy and
    horizon, so any change of state is a different key: nothing needs invalidating, and a hit
    is the very answer :func:`forecast` gives (the run is pure). Each caller gets its own
    copies of the mappings, so none can alter what the next one reads."""
    key = (_fingerprint(snapshot), tuple(displaced.items()), policy, horizon_s)
    with _forecasts_lock:
        found = _forecasts.get(key)
        if found is not None:
            _forecasts.move_to_end(key)
    if found is None:
        found = forecast(snapshot, displaced, policy, horizon_s)
        with _forecasts_lock:
            _forecasts[key] = found
            while len(_forecasts) > CACHED_FORECASTS:
                _forecasts.popitem(last=False)
    return _copy(found)


def clear_forecasts() -> None:
    """Forget every kept forward run (tests compare cached and fresh answers)."""
    with _forecasts_lock:
        _forecasts.clear()


def _fingerprint(snapshot: Snapshot) -> tuple:
    """Every field of the snapshot as a hashable value (its dicts as sorted item tuples); a
    field added to `Snapshot` later joins the key by itself."""
    return tuple(
        tuple(sorted(value.items())) if isinstance(value, dict) else value
        for value in (getattr(snapshot, f.name) for f in fields(snapshot))
    )


def _copy(kept: Forecast) -> Forecast:
    series = tuple((at, dict(gpus)) for at, gpus in kept.series)
    return Forecast(dict(kept.starts), series, dict(kept.stopped))


def forecast(
    snapshot: Snapshot, displaced: dict[JobKey, str], policy: Policy, horizon_s: float
) -> Forecast:
    """Cycles settled at the snapshot's clock with `policy` (what stops now), then the ETA's
    forward run (`eta.estimate_starts` on the ETA's policy: allocate and backfill) noting each
    step's GPUs per project. `displaced` are jobs the change itself stopped, with the reason."""
    waiting = {job.key for job in snapshot.jobs if not job.running}
    settled, plans = settle(snapshot, policy)
    stopped = dict(displaced)
    for plan in plans:
        stopped.update((d.job, d.reason) for d in plan.decisions if d.kind == "evict")
    now = snapshot.now
    started = {job.key: now for job in settled.jobs if job.running and job.key in waiting}
    series: list[tuple[float, dict[str, float]]] = []
    step = max(resolution_for(settled, horizon_s, steps=STEPS), horizon_s / MAX_STEPS)
    ahead = replace(policy, consolidation=False, reclaim=False, preempt=False)
    starts = estimate_starts(settled, ahead, horizon_s, step,
                             on_step=lambda at: series.append((at.now, held(at))))  # fmt: skip
    running_now = {job.key for job in settled.jobs if job.running}
    starts.update({key: at for key, at in started.items() if key not in starts})
    for key in stopped:
        starts.setdefault(key, None if key not in running_now else now)
    return Forecast(starts, tuple(series), stopped)


def held(snapshot: Snapshot) -> dict[str, float]:
    """GPUs the running jobs of each project hold (every project named, 0 when none)."""
    milli = dict.fromkeys((p.name for p in snapshot.projects), 0)
    for job in snapshot.jobs:
        if job.running:
            milli[job.project] = milli.get(job.project, 0) + job.milli_total
    return {name: value / 1000 for name, value in milli.items()}


def apply_changes(snapshot: Snapshot, changes: list[Change]) -> tuple[Snapshot, dict[JobKey, str]]:
    """`snapshot` with `changes` made in order, and the running jobs they stop (a drained or
    removed node's jobs, back to Pending with their order kept), each with the reason."""
    displaced: dict[JobKey, str] = {}
    for change in changes:
        snapshot = _APPLY[type(change)](snapshot, change, displaced)
    return snapshot, displaced


def _project(snapshot: Snapshot, change: ProjectChange, displaced) -> Snapshot:
    names = {p.name for p in snapshot.projects}
    if change.project not in names:
        raise ValueError(f"no project named {change.project!r}")
    unknown = set(change.values) - set(PROJECT_FIELDS)
    if unknown:
        raise ValueError(f"a project change sets only {', '.join(PROJECT_FIELDS)}")
    for name, value in change.values.items():
        if name == "quota" and value is None:
            raise ValueError("quota must be a number of GPUs, not empty")
        if value is not None and not value >= 0:  # NaN fails too
            raise ValueError(f"{name} must be 0 or more GPUs, not {value}")
    projects = tuple(
        replace(p, **change.values) if p.name == change.project else p for p in snapshot.projects
    )
    return replace(snapshot, projects=projects)


def _node(snapshot: Snapshot, change: NodeChange, displaced) -> Snapshot:
    if change.node not in {n.name for n in snapshot.nodes}:
        raise ValueError(f"no node named {change.node!r}")
    if change.action in ("drain", "remove"):
        verb = "drained" if change.action == "drain" else "removed"
        reason = DRAIN_REASON.format(node=change.node, verb=verb)
        snapshot = _stop_jobs_on(snapshot, change.node, reason, displaced)
    if change.action == "remove":
        return replace(snapshot, nodes=tuple(n for n in snapshot.nodes if n.name != change.node))
    schedulable = change.action == "uncordon"
    nodes = tuple(
        replace(n, schedulable=schedulable) if n.name == change.node else n for n in snapshot.nodes
    )
    return replace(snapshot, nodes=nodes)


def _stop_jobs_on(snapshot: Snapshot, node: str, reason: str, displaced) -> Snapshot:
    """The jobs with a pod on `node` back to Pending (order kept, as an eviction leaves them)."""
    jobs = []
    for job in snapshot.jobs:
        if any(pod.node == node for pod in job.placement):
            displaced[job.key] = reason
            job = replace(job, placement=(), started=None, expected_end=None, backfilled=False)
        jobs.append(job)
    return replace(snapshot, jobs=tuple(jobs))


def _add_node(snapshot: Snapshot, change: AddNode, displaced) -> Snapshot:
    if change.node.name in {n.name for n in snapshot.nodes}:
        raise ValueError(f"a node named {change.node.name!r} is there already")
    return replace(snapshot, nodes=(*snapshot.nodes, change.node))


def _add_job(snapshot: Snapshot, change: AddJob, displaced) -> Snapshot:
    job = change.job
    if job.project not in {p.name for p in snapshot.projects}:
        raise ValueError(f"no project named {job.project!r}")
    if job.key in {j.key for j in snapshot.jobs}:
        raise ValueError(f"a job named {job.name!r} is in {job.project} already")
    order = max((j.order for j in snapshot.jobs), default=0) + 1
    pending = replace(job, order=order, placement=(), started=None, expected_end=None)
    return replace(snapshot, jobs=(*snapshot.jobs, pending))


def _add_reservation(snapshot: Snapshot, change: AddReservation, displaced) -> Snapshot:
    booking = change.reservation
    if booking.project not in {p.name for p in snapshot.projects}:
        raise ValueError(f"no project named {booking.project!r}")
    if booking.name in {r.name for r in snapshot.reservations}:
        raise ValueError(f"a reservation named {booking.name!r} is there already")
    if booking.end <= snapshot.now:
        return snapshot  # over already: it holds nothing from now on
    return replace(snapshot, reservations=(*snapshot.reservations, booking))


_APPLY = {
    ProjectChange: _project, NodeChange: _node, AddNode: _add_node, AddJob: _add_job,
    AddReservation: _add_reservation,
}  # fmt: skip
