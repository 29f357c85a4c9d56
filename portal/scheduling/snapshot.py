"""The database as the scheduler's plain dataclasses: what one cycle may look at.

`load()` reads nodes, departments, projects and the jobs that are pending or hold GPUs with a few
`values_list` queries (no ORM object leaves this module, and none is built: at 4,000 jobs that is
the difference between milliseconds and a second). Next to the scheduler's `Snapshot` it keeps
what the commit needs to write conditionally: each job's row id and the status it was read in,
and, with fair share over time on, each project's and department's usage (`past_usage`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import datetime

from portal.budgets import services as budget_services
from portal.budgets.models import Budget
from portal.budgets.usage import BudgetState, measure_all
from portal.cluster.devices import outside_devices
from portal.cluster.models import Node as NodeRow
from portal.cluster.models import PoolTopology
from portal.core import clock
from portal.jobs import placement
from portal.jobs.health import POLICY_FIELDS, HealthPolicy, resolve
from portal.jobs.models import HOLDING, Status
from portal.jobs.models import Job as JobModel
from portal.reservations import services as reservation_services
from portal.scheduling import past_usage
from portal.tenancy.models import MIN_RUNTIME_FIELDS
from portal.tenancy.models import Department as DepartmentRow
from portal.tenancy.models import Project as ProjectRow
from portal.tenancy.userlimits import for_core as user_limits_for_core
from scheduler import Department, Job, JobKey, Node, PodPlacement, Project, Reservation, Snapshot


@dataclass(frozen=True)
class JobRow:
    """What the commit and the agent glue need of a job row besides the scheduler's view."""

    id: int
    project_id: int
    status: str
    pending_reason: str
    started_at: datetime | None
    type: str = "train"
    idle_since: datetime | None = None
    warned_for: str = ""
    extended_s: int = 0
    activity: str = ""
    active_at: datetime | None = None
    stuck: bool = False
    estimate_s: int | None = None  # the submitter's own run-time estimate (for predictions)
    held_gpu_s: float = 0.0  # GPU-seconds held in runs ended by an eviction or a move (L1)
    name: str = ""
    user_id: int | None = None  # the submitter (a run copies both: it outlives the job)

    @property
    def holding(self) -> bool:
        """True while the row holds GPUs (ContainerCreating or Running)."""
        return self.status in HOLDING


@dataclass(frozen=True)
class ProjectRowInfo:
    """A project's row id, stored fair share and job health policies (its own or inherited)."""

    id: int
    fair_share: float
    health: HealthPolicy = field(default_factory=HealthPolicy)
    user_fair_shares: dict[str, float] = field(default_factory=dict)  # R21.4, as stored

    @property
    def interactive_time_limit_s(self) -> int | None:
        """The interactive time limit in force (the project's, else its department's)."""
        return self.health.interactive_time_limit_s


@dataclass(frozen=True)
class CycleRows:
    """Everything one cycle read from the database: the scheduler's dataclasses and the rows
    behind them (the core's device state is another thing: `scheduler.state.ClusterState`)."""

    nodes: tuple[Node, ...]
    departments: tuple[Department, ...]
    projects: tuple[Project, ...]
    jobs: tuple[Job, ...]
    rows: dict[JobKey, JobRow]
    project_rows: dict[str, ProjectRowInfo]
    usage: dict[str, float] = field(default_factory=dict)  # R2.9, E10; empty when off
    budgets: tuple[BudgetState, ...] = ()  # every budget at the cycle's time (R20.1)
    topology: dict[str, tuple[str, ...]] = field(default_factory=dict)  # levels per pool (R23.1)
    reservations: tuple[Reservation, ...] = ()  # the occurrences in view (R22)

    def snapshot(
        self, now: float, leaving: frozenset[JobKey] = frozenset(), service: bool = False
    ) -> Snapshot:
        """The scheduler's snapshot at `now` without the jobs in `leaving` (they finished).

        With `service` (the policy has service bands, L1) a running job's `attained_gpu_s` also
        counts its current run up to `now`; without, it is what earlier runs held."""
        jobs = self.jobs if not leaving else tuple(j for j in self.jobs if j.key not in leaving)
        if service:
            jobs = tuple(with_current_run(job, now) for job in jobs)
        return Snapshot(
            nodes=self.nodes,
            projects=self.projects,
            jobs=jobs,
            departments=self.departments,
            now=now,
            usage=self.usage,
            topology=self.topology,
            reservations=self.reservations,
        )


def with_current_run(job: Job, now: float) -> Job:
    """The job with the GPU-seconds of its current run added to what earlier runs held (L1)."""
    if job.started is None:
        return job
    held = job.milli_total / 1000 * max(0.0, now - job.started)
    return replace(job, attained_gpu_s=job.attained_gpu_s + held)


def _gpus(value) -> float | None:
    """A Decimal column as float (None stays None)."""
    return None if value is None else float(value)


def _placement(stored: list[dict]) -> tuple[PodPlacement, ...]:
    return tuple(PodPlacement(*pod) for pod in placement.decode(stored))


def load_nodes(jobs: tuple[Job, ...] = ()) -> tuple[Node, ...]:
    """Every node (R2.6: the scheduler itself leaves out nodes that are not ready).

    What pods Allot did not place hold on a node (issue 33) becomes `outside_devices`: that many
    of the devices no placement of `jobs` uses, highest first (the cluster's device plugin, not
    Allot, chose theirs: only the count is known), and their CPU and memory."""
    rows = NodeRow.objects.order_by("name").values_list(
        "name", "gpus", "gpu_memory_bytes", "pool", "ready", "schedulable", "cordoned_in_cluster",
        "cpu_millis", "memory_bytes", "failed_devices", "failed_in_cluster", "outside_gpus",
        "outside_cpu_millis", "outside_memory_bytes", "labels",
    )  # fmt: skip
    nodes = []
    for (name, gpus, memory, pool, ready, schedulable, cordoned, cpu, ram, marked, reported,
         outside, outside_cpu, outside_ram, labels) in rows:  # fmt: skip
        failed = tuple(sorted({*marked, *reported}))
        nodes.append(Node(name, gpus, memory, pool, ready, schedulable and not cordoned,
                          cpu_millis=cpu, memory_bytes=ram, failed_devices=failed,
                          outside_devices=outside_devices(gpus, outside, set(failed)),
                          outside_cpu_millis=outside_cpu,
                          outside_memory_bytes=outside_ram,
                          labels=tuple(sorted((labels or {}).items()))))  # fmt: skip
    return clear_of(tuple(nodes), jobs)


def load_topology() -> dict[str, tuple[str, ...]]:
    """Each node pool's topology levels, widest first (R23.1); pools without a row have none."""
    return {
        pool: tuple(levels) for pool, levels in PoolTopology.objects.values_list("pool", "levels")
    }


def clear_of(nodes: tuple[Node, ...], jobs: tuple[Job, ...]) -> tuple[Node, ...]:
    """`nodes` with their outside devices moved off the devices `jobs` hold (the same count)."""
    if not any(node.outside_devices for node in nodes):
        return nodes
    used: dict[str, set[int]] = {}
    for job in jobs:
        for pod in job.placement:
            used.setdefault(pod.node, set()).update(pod.devices)
    return tuple(
        replace(node, outside_devices=outside_devices(
            node.gpus, len(node.outside_devices),
            {*node.failed_devices, *used.get(node.name, ())}))
        if node.outside_devices else node
        for node in nodes
    )  # fmt: skip


def _seconds(value) -> float | None:
    """A minimum run time column as float seconds (None, "as the level above says", stays)."""
    return None if value is None else float(value)


def load_departments(ids: Collection[int] | None = None) -> tuple[Department, ...]:
    """Every department (or those of `ids`) with its own minimum run times (R7.4; None: the
    cluster default) and its CPU and memory limits (issue 26; None: none); its id is the
    creation order of R2.10's tie-breaks."""
    rows = DepartmentRow.objects.order_by("id")
    if ids is not None:
        rows = rows.filter(id__in=ids)
    rows = rows.values_list(
        "id", "name", "quota", "over_quota_weight", "limit", *MIN_RUNTIME_FIELDS,
        "cpu_limit_millis", "memory_limit_bytes",
    )  # fmt: skip
    return tuple(
        Department(name, float(quota), _gpus(weight), _gpus(limit), order=pk,
                   reclaim_min_runtime_s=_seconds(reclaim),
                   preempt_min_runtime_s=_seconds(preempt), cpu_limit_millis=cpu_limit,
                   memory_limit_bytes=memory_limit)
        for pk, name, quota, weight, limit, reclaim, preempt, cpu_limit, memory_limit in rows
    )  # fmt: skip


def load_projects(
    departments: set[str], names: Collection[str] | None = None
) -> tuple[tuple[Project, ...], dict[str, ProjectRowInfo]]:
    """Every project (or those named in `names`; of a known department, if any) as the
    scheduler sees it; its row facts.

    A project's own minimum run times (R7.4) go to the scheduler as they are: None inherits,
    and the scheduler resolves it through the department to the cluster default; its per-user
    limits (R21.1-R21.3) as its default and overrides, for the core to enforce."""
    rows = ProjectRow.objects.order_by("id")
    if names is not None:
        rows = rows.filter(name__in=names)
    rows = rows.values_list(
        "id", "name", "quota", "over_quota_weight", "limit", "node_pools", "department__name",
        "fair_share", *POLICY_FIELDS, *(f"department__{name}" for name in POLICY_FIELDS),
        *MIN_RUNTIME_FIELDS, "cpu_limit_millis", "memory_limit_bytes", "user_fair_share",
        "user_weights", "user_fair_shares",
    )  # fmt: skip
    projects, infos, count = [], {}, len(POLICY_FIELDS)
    user_limits = user_limits_for_core(names)
    for pk, name, quota, weight, limit, pools, department, share, *policies in rows:
        own = dict(zip(POLICY_FIELDS, policies[:count], strict=True))
        inherited = dict(zip(POLICY_FIELDS, policies[count : 2 * count], strict=True))
        reclaim, preempt, cpu_limit, memory_limit, by_user, weights, users = policies[2 * count :]
        if department is not None and department not in departments:
            continue
        projects.append(
            Project(name, float(quota), _gpus(weight), _gpus(limit), tuple(pools or ()),
                    department, order=pk, reclaim_min_runtime_s=_seconds(reclaim),
                    preempt_min_runtime_s=_seconds(preempt), cpu_limit_millis=cpu_limit,
                    memory_limit_bytes=memory_limit, user_limits=user_limits.get(pk, ()),
                    user_fair_share=by_user,
                    user_weights=tuple(sorted((u, float(w)) for u, w in (weights or {}).items())))
        )  # fmt: skip
        infos[name] = ProjectRowInfo(pk, share, resolve(own, inherited), users or {})
    return tuple(projects), infos


def load_jobs(project_names: dict[int, str]) -> tuple[tuple[Job, ...], dict[JobKey, JobRow]]:
    """Jobs that are pending or hold GPUs, oldest first; finished jobs are history, not input.

    A job whose project is not in `project_names` (created after the projects were read) is
    left for the next cycle.
    """
    rows = (
        JobModel.objects.filter(status__in=[Status.PENDING, *HOLDING])
        .order_by("id")
        .values_list(
            "id", "project_id", "name", "type", "gpus", "pods", "priority", "status",
            "placement", "pending_reason", "started_at", "image", "user__username",
            "idle_since", "warned_for", "extended_s", "activity", "active_at", "stuck",
            "expected_s", "expected_end", "backfilled", "estimate_s", "held_gpu_s",
            "cpu_millis", "memory_bytes", "gpu_memory_bytes", "user_id", "topology", named=True,
        )
    )  # fmt: skip
    jobs, index = [], {}
    for row in rows:
        project = project_names.get(row.project_id)
        if project is None:
            continue
        pods = _placement(row.placement) if row.status in HOLDING else ()
        started = row.started_at.timestamp() if pods and row.started_at else None
        job = Job(
            project, row.name, float(row.gpus), row.pods, row.type, row.priority, order=row.id,
            placement=pods, user=row.user__username or "", image=row.image,
            started=started, backfilled=row.backfilled,
            # until the predictor has written its first prediction (which the estimate caps),
            # the submitter's own estimate is the run time backfill and reservations count on
            expected_s=row.expected_s if row.expected_s is not None else row.estimate_s,
            expected_end=row.expected_end if started is not None else None,
            attained_gpu_s=row.held_gpu_s, cpu_millis=row.cpu_millis, memory_bytes=row.memory_bytes,
            gpu_memory_bytes=row.gpu_memory_bytes,
            topology_required=(row.topology or {}).get("required"),
            topology_preferred=(row.topology or {}).get("preferred"),
        )  # fmt: skip
        jobs.append(job)
        index[job.key] = JobRow(
            id=row.id, project_id=row.project_id, status=row.status,
            pending_reason=row.pending_reason, started_at=row.started_at, type=row.type,
            idle_since=row.idle_since, warned_for=row.warned_for, extended_s=row.extended_s,
            activity=row.activity, active_at=row.active_at, stuck=row.stuck,
            estimate_s=row.estimate_s, held_gpu_s=row.held_gpu_s, name=row.name,
            user_id=row.user_id,
        )  # fmt: skip
    return tuple(jobs), index


def load(at: datetime | None = None, budgets: list[BudgetState] | None = None) -> CycleRows:
    """Read the whole scheduling state; call it inside the cycle's transaction, under its lock.

    The reads are separate statements (READ COMMITTED), so they go from the cluster outwards:
    nodes, departments, projects, jobs; what refers to a row that appeared in between (a job of a
    new project, a project of a new department) waits for the next cycle. The usage of fair
    share over time is as of `at` (default: now), summed from the runs at most once a minute.
    """
    nodes = load_nodes()
    departments = load_departments()
    projects, infos = load_projects({department.name for department in departments})
    jobs, rows = load_jobs({info.id: name for name, info in infos.items()})
    nodes = clear_of(nodes, jobs)
    if budgets is None:
        budgets = measure_all(Budget.objects.all(), at or clock.now())
    jobs = budget_services.with_verdicts(jobs, projects, budgets)  # R20.2-R20.4
    return CycleRows(
        nodes=nodes,
        departments=departments,
        projects=projects,
        jobs=jobs,
        rows=rows,
        project_rows=infos,
        usage=past_usage.usage_for(nodes, projects, at),
        budgets=tuple(budgets),
        topology=load_topology(),
        reservations=reservation_services.in_view(at or clock.now()),  # R22
    )
