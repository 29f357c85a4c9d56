"""Queues (projects and departments) during a cycle: quotas, fair shares, allocated counters,
and the keys that order them for allocation (R4.1) and for giving up victims (R8.1).

A project with `user_fair_share` (issue 36, R21.4-R21.8, docs/user-fairness.md) gets one more
level below it: a queue per active user, so the same division (R2), order (R4.1, R8.1) and
reclaim rules (R9) that run between projects run between the people of the project. Those user
queues are the leaves their jobs count in (:func:`leaf_of`); everything that speaks of the
project itself (limits, quota, pools) still reads the project's queue.
"""

from __future__ import annotations

from .fairshare import Share, divide_tree
from .model import Job, Project, Snapshot, to_milli

NO_SHARE_PENALTY = 1000  # R4.1.5: allocatable 0 -> value x 1000


class QueueState:
    """A project or department with its counters in thousandths of a GPU (CPU in millicores and
    memory in bytes beside them, for the CPU and memory limits of issue 26)."""

    __slots__ = (
        "allocated",
        "allocated_cpu",
        "allocated_memory",
        "allocated_np",
        "children",
        "cpu_limit",
        "deserved",
        "fair_share",
        "is_project",
        "leaf",
        "limit",
        "memory_limit",
        "name",
        "node_pools",
        "order",
        "parent",
        "preempt_min_runtime_s",
        "priority",
        "reclaim_min_runtime_s",
        "user",
        "users",
        "weight",
    )

    def __init__(self, name, deserved, limit, weight, priority, order, is_project, node_pools=()):
        self.name = name
        self.deserved: int | None = deserved
        self.limit: int | None = limit
        self.weight: float = weight
        self.priority: int = priority
        self.order: int = order
        self.is_project = is_project
        self.node_pools: tuple[str, ...] = node_pools
        self.parent: QueueState | None = None
        self.children: list[QueueState] = []
        self.fair_share = 0
        self.allocated = 0
        self.allocated_np = 0
        self.allocated_cpu = 0  # millicores of its running pods (issue 26)
        self.allocated_memory = 0  # bytes
        self.cpu_limit: int | None = None  # R3.1 for CPU; None = no limit
        self.memory_limit: int | None = None
        self.reclaim_min_runtime_s: float | None = None  # R7.4; None inherits
        self.preempt_min_runtime_s: float | None = None
        # R21.4: a user's queue below a project with user fair share carries the user's name;
        # such a project maps its active users to their queues. A leaf holds jobs directly.
        self.user: str | None = None
        self.users: dict[str, QueueState] = {}
        self.leaf = is_project

    @property
    def label(self) -> str:
        """How reasons name the queue: the project or department, or "ann in team-a"."""
        if self.user is None:
            return self.name
        who = self.user or "the anonymous user"
        return f"{who} in {self.parent.name}" if self.parent is not None else who

    @property
    def allocatable(self) -> int | None:
        """max(deserved, fair share) capped by the limit; None = unlimited (R2.12)."""
        if self.deserved is None:
            return self.limit
        value = max(self.deserved, self.fair_share)
        return value if self.limit is None else min(self.limit, value)

    def path(self) -> list[QueueState]:
        """Root-first list of this queue and its ancestors."""
        chain = []
        queue: QueueState | None = self
        while queue is not None:
            chain.append(queue)
            queue = queue.parent
        return chain[::-1]

    def within_deserved(self, extra: int) -> bool:
        """allocated + extra <= deserved (deserved unlimited always holds)."""
        return self.deserved is None or self.allocated + extra <= self.deserved

    def dominant_share(self, allocated: int, total: int) -> float:
        """allocated / allocatable share (unlimited -> cluster total, zero -> x1000) (R4.1.5)."""
        allocatable = self.allocatable
        if allocatable is None:
            allocatable = total
        if allocatable == 0:
            return allocated * NO_SHARE_PENALTY
        return allocated / allocatable

    def zero_share_violation(self, extra: int) -> bool:
        """Allocatable share 0 but would hold GPUs (R4.1.4, E2)."""
        return self.allocatable == 0 and self.allocated + extra > 0

    def allocation_key(self, job_milli: int, total: int) -> tuple:
        """Sort key of R4.1 (smaller is served first) for this queue offering a job of
        `job_milli`. Rule 1 (over fair share in every resource) is inert for GPU-only
        snapshots (E9) and is left out."""
        allocatable = self.allocatable
        return (
            not self.within_deserved(job_milli),
            -self.priority,
            self.zero_share_violation(job_milli),
            self.dominant_share(self.allocated + job_milli, total),
            self.dominant_share(self.allocated, total),
            allocatable if allocatable is not None else float("inf"),
            self.order,
        )

    def victim_key(self, taken: int, candidate: int, total: int) -> tuple:
        """Sort key of R8.1 (smaller gives victims first): R4.1 reversed, evaluated with no job
        and with the victims taken so far plus the next candidate subtracted in rule 5."""
        allocatable = self.allocatable
        return (
            self.within_deserved(0),
            self.priority,
            not self.zero_share_violation(0),
            -self.dominant_share(self.allocated - taken - candidate, total),
            -self.dominant_share(self.allocated, total),
            -(allocatable if allocatable is not None else float("inf")),
            -self.order,
        )


def build_queues(snapshot: Snapshot) -> dict[str, QueueState]:
    """Projects and departments of the snapshot, linked into their hierarchy (R2.11)."""
    queues: dict[str, QueueState] = {}
    for dept in snapshot.departments:
        queues[dept.name] = _queue(dept, is_project=False)
    for project in snapshot.projects:
        queue = _queue(project, is_project=True, node_pools=tuple(project.node_pools))
        queues[project.name] = queue
        parent = queues.get(project.department) if project.department else None
        if parent is not None and not parent.is_project:
            queue.parent = parent
            parent.children.append(queue)
    return queues


def user_queue_name(project: str, user: str) -> str:
    """The queue name of `user` inside `project` (R21.4). Project and department names are DNS
    labels in the portal, so a name with a slash never collides with theirs;
    :func:`add_user_queues` refuses a snapshot where it would."""
    return f"{project}/{user}"


def add_user_queues(
    queues: dict[str, QueueState], projects: tuple[Project, ...], jobs: list[Job]
) -> None:
    """Give every project with `user_fair_share` a child queue per active user (R21.4).

    A user is active when they have a running or pending job in the project this cycle (the
    snapshot holds no other jobs). A user's queue has no quota of its own (deserved 0: the
    project's quota keeps bounding interactive jobs, R3.2, R21.8) and no limit; its over-quota
    weight is the project's weight for that user (1 unless set), so the project's fair share
    is divided equally by default (R2.9 one level down). Its age for the tie-breaks (R2.10,
    R4.1.8) is its oldest job's."""
    fair = {p.name: p for p in projects if p.user_fair_share}
    if not fair:
        return
    oldest: dict[tuple[str, str], int] = {}
    for job in jobs:
        if job.project in fair:
            key = (job.project, job.user)
            oldest[key] = min(oldest.get(key, job.order), job.order)
    for (project_name, user), order in sorted(oldest.items(), key=lambda item: item[1]):
        project = queues[project_name]
        spec = fair[project_name]
        name = user_queue_name(project_name, user)
        if name in queues:
            raise ValueError(f"user queue {name!r} has the name of a project or department")
        weight = dict(spec.user_weights).get(user, 1.0)
        queue = QueueState(name, 0, None, float(weight), project.priority, order, False)
        queue.user = user
        queue.leaf = True
        queue.parent = project
        project.children.append(queue)
        project.users[user] = queue
        project.leaf = False
        queues[name] = queue


def leaf_of(queues: dict[str, QueueState], job: Job) -> QueueState | None:
    """The queue a job counts in: its user's below a project with user fair share (R21.4),
    else its project's; None for a job of no known project."""
    project = queues.get(job.project)
    if project is None or not project.users:
        return project
    return project.users.get(job.user, project)


def _queue(spec, is_project: bool, node_pools=()) -> QueueState:
    weight = spec.quota if spec.over_quota_weight is None else spec.over_quota_weight
    deserved = None if spec.quota is not None and spec.quota < 0 else to_milli(spec.quota)
    limit = None if spec.limit is None or spec.limit < 0 else to_milli(spec.limit)
    queue = QueueState(
        spec.name, deserved, limit, float(weight), spec.priority, spec.order, is_project, node_pools
    )
    queue.reclaim_min_runtime_s = spec.reclaim_min_runtime_s
    queue.preempt_min_runtime_s = spec.preempt_min_runtime_s
    queue.cpu_limit = spec.cpu_limit_millis
    queue.memory_limit = spec.memory_limit_bytes
    return queue


def compute_fair_shares(
    queues: dict[str, QueueState], jobs: list[Job], total: int, usage: dict, k_value: float
) -> None:
    """Set every queue's fair share from the snapshot's requests (R2.4-R2.11).

    A queue's request is the GPUs of its allocated and pending jobs, summed up the hierarchy
    from the job's leaf (its user's queue with user fair share, R21.4). Users' queues have no
    historical usage of their own (R2.9's k term sees 0 for them).
    """
    request: dict[str, int] = dict.fromkeys(queues, 0)
    for job in jobs:
        queue = leaf_of(queues, job)
        while queue is not None:
            request[queue.name] += job.milli_total
            queue = queue.parent
    shares = {
        name: Share(
            name=name,
            deserved=q.deserved,
            limit=q.limit,
            weight=q.weight,
            request=request[name],
            priority=q.priority,
            order=q.order,
            usage=float(usage.get(name, 0.0)) if q.user is None else 0.0,
        )
        for name, q in queues.items()
    }
    for name, q in queues.items():
        shares[name].children = [shares[c.name] for c in q.children]
    top = [shares[name] for name, q in queues.items() if q.parent is None]
    divide_tree(total, top, k_value)
    for name, q in queues.items():
        q.fair_share = shares[name].fair_share
