"""Everything the overview dashboard shows, as one JSON-ready dict, and each user's part of it.

`build_overview()` builds the cluster admin's view once: cluster tiles, every project, running
and pending jobs, nodes device by device, with the agent's latest utilization figures
(`portal.cluster.metrics`). `overview_for(full, visible)` cuts it down to what one user may see:
the cluster totals and nodes stay (they are everyone's), projects and jobs are those of the
user's projects, and a device shared with another project's job shows the share, not the name.
The cycle broadcasts the full view once; each websocket consumer and the REST endpoint apply
`overview_for`, so the API and the live page can never disagree about who sees what.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.db.models import F, OuterRef, Subquery
from django.utils import timezone

from portal import access
from portal.cluster import metrics
from portal.cluster.devices import outside_devices
from portal.cluster.models import Node
from portal.jobs.models import HOLDING, Job, JobEvent, JobType, Status, UsageSample
from portal.jobs.queries import with_usage
from portal.jobs.redaction import redactor
from portal.tenancy.models import Project
from scheduler.quantity import MIB, mib_ceil

JOBS_SHOWN = 1000  # per list and viewer; the totals count them all
UNKNOWN_POOL = "unknown"  # the pool of a pod whose node is no longer recorded
IDLE_BELOW = 0.05  # a GPU under 5 % utilization is idle (Run:AI's "idle allocated GPUs")
TRAIN_PRIORITY, BUILD_PRIORITY = 50, 100  # R7.1: the job's priority class without its own


def build_overview(user=None) -> dict:
    """The overview as `user` may see it; no user is the cluster admin's (full) view."""
    visible = None if user is None else visible_projects(user)
    return overview_for(build_full_overview(), visible)


def visible_projects(user) -> frozenset[str] | None:
    """Names of the projects whose jobs `user` sees; None means all (cluster admins)."""
    if access.is_cluster_admin(user):
        return None
    return frozenset(access.projects_for(user).values_list("name", flat=True))


def build_full_overview() -> dict:
    """Cluster tiles, all projects, running and pending jobs, and nodes with their devices."""
    now = timezone.now()
    figures = metrics.latest()
    holding = list(
        Job.objects.filter(status__in=HOLDING).select_related("project", "user").order_by("id")
    )
    nodes = list(Node.objects.order_by("name"))
    running = [_running(job, figures, now) for job in holding]
    pending = _pending(now)
    node_rows = _nodes(nodes, holding, figures)
    return {
        "generated_at": now.isoformat(),
        "simulated": figures.simulated,  # the agent's word, with its latest figures
        "metrics_at": figures.at.isoformat() if figures.at else None,
        "cluster_problem": figures.problem,
        "cluster": _cluster(node_rows, running, len(pending), figures),
        "projects": _projects(
            Project.objects.select_related("department"),
            _requests_by_project(holding),
            _by_pool(holding, {node.name: node.pool for node in nodes}),
            sorted({node.pool for node in nodes}),
        ),
        "running": running,
        "pending": pending,
        "nodes": node_rows,
        "attention": _attention(running, now),
    }


def overview_for(full: dict, visible: frozenset[str] | None) -> dict:
    """`full` cut down to the projects in `visible` (None: all), at most JOBS_SHOWN per list."""
    if visible is None:
        return {**full, "running": full["running"][:JOBS_SHOWN],
                "pending": full["pending"][:JOBS_SHOWN]}  # fmt: skip
    redact = redactor(visible, [p["name"] for p in full["projects"]])  # issue 32 item 7
    attention = {
        panel: [{**job, "problem": redact(job["problem"])} if "problem" in job else job
                for job in jobs if job["project"] in visible]
        for panel, jobs in full["attention"].items()
    }  # fmt: skip
    pending = [{**j, "pending_reason": redact(j["pending_reason"]),
                "expected_start": redact(j.get("expected_start") or "")}
               for j in full["pending"] if j["project"] in visible][:JOBS_SHOWN]  # fmt: skip
    return {
        **full,
        "attention": attention,
        "projects": [p for p in full["projects"] if p["name"] in visible],
        "running": [j for j in full["running"] if j["project"] in visible][:JOBS_SHOWN],
        "pending": pending,
        "nodes": [_node_for(node, visible) for node in full["nodes"]],
    }


def _node_for(node: dict, visible: frozenset[str]) -> dict:
    devices = [
        {
            **device,
            "jobs": [
                job if job["project"] in visible else {"project": None, "name": None,
                                                       "share": job["share"]}
                for job in device["jobs"]
            ],
        }
        for device in node["devices"]
    ]  # fmt: skip
    return {**node, "devices": devices}


# --- the parts --------------------------------------------------------------------------------


def _cluster(nodes: list[dict], running: list[dict], pending: int, figures) -> dict:
    total = sum(node["gpus"] for node in nodes)
    # R2.6: failed devices add nothing (issue 26)
    # and neither do GPUs that pods Allot did not place hold (issue 33)
    ready = sum(node["gpus"] - len(node["failed_devices"]) - node["outside_gpus"]
                for node in nodes if node["ready"])  # fmt: skip
    allocated = round(sum(job["allocated_gpus"] for job in running), 3)
    idle = sum(
        job["allocated_gpus"]
        for job in running
        if job["status"] == Status.RUNNING
        and job["utilization"] is not None
        and job["utilization"] < IDLE_BELOW
    )
    busy = [d["utilization"] for n in nodes for d in n["devices"] if d["utilization"] is not None]
    return {
        "nodes": len(nodes),
        "ready_nodes": sum(1 for node in nodes if node["ready"]),
        "gpus": total,
        "ready_gpus": ready,
        "allocated_gpus": allocated,
        "free_gpus": round(max(ready - allocated, 0.0), 3),
        "idle_allocated_gpus": round(idle, 3),
        # the mean over every GPU of the cluster, idle ones at 0; None when nothing was measured
        "utilization": round(sum(busy) / total, 3) if figures.at and total else None,
        "utilization_simulated": figures.simulated,
        "running_jobs": len(running),
        "pending_jobs": pending,
        "failed_gpus": sum(len(node["failed_devices"]) for node in nodes),
        "outside_gpus": sum(node["outside_gpus"] for node in nodes),
        **_cpu_and_memory(nodes),
    }


def _cpu_and_memory(nodes: list[dict]) -> dict:
    """Allocatable and allocated CPU and memory of the ready nodes that track them (issue 26)."""
    ready = [node for node in nodes if node["ready"]]
    return {
        "cpu_millis": sum(node["cpu_millis"] or 0 for node in ready),
        "allocated_cpu_millis": sum(node["allocated_cpu_millis"] for node in nodes),
        **memory_figure("memory", sum(node["memory_bytes"] or 0 for node in ready), floor=True),
        **memory_figure("allocated_memory", sum(node["allocated_memory_bytes"] for node in nodes)),
    }


def memory_figure(name: str, size: int | None, floor: bool = False) -> dict:
    """A memory amount both ways: `<name>_bytes` exactly (issue 33), and `<name>_mib` as the
    overview has always answered it (a node's rounded down, a request up) for its readers."""
    if size is None:
        return {f"{name}_mib": None, f"{name}_bytes": None}
    return {f"{name}_mib": size // MIB if floor else mib_ceil(size), f"{name}_bytes": size}


def _requests_by_project(holding: list[Job]) -> dict[str, tuple[int, int]]:
    """project name -> (millicores, bytes) its placed pods request."""
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for job in holding:
        pods = len(job.placed_pods)
        held[job.project.name][0] += job.cpu_millis * pods
        held[job.project.name][1] += job.memory_bytes * pods
    return {name: (cpu, memory) for name, (cpu, memory) in held.items()}


POOL_FIGURES = ("allocated_gpus", "allocated_cpu_millis", "allocated_memory_bytes",
                "running_jobs")  # fmt: skip


def _by_pool(holding: list[Job], pools: dict[str, str]) -> dict[str, dict[str, dict]]:
    """project name -> node pool -> what its placed pods hold there: GPUs, CPU, memory, and
    running jobs, a job counting in the pool of its first pod (a gang spanning pools counts
    once, so the pools add up to the project's figures)."""
    held: dict[str, dict[str, dict]] = defaultdict(dict)
    for job in holding:
        for index, pod in enumerate(job.placed_pods):
            pool = pools.get(pod.node, UNKNOWN_POOL)
            row = held[job.project.name].setdefault(pool, dict.fromkeys(POOL_FIGURES, 0))
            row["allocated_gpus"] += float(job.gpus)
            row["allocated_cpu_millis"] += job.cpu_millis
            row["allocated_memory_bytes"] += job.memory_bytes
            row["running_jobs"] += 1 if index == 0 else 0
    return held


def _pool_rows(project, held: dict[str, dict], known: list[str]) -> list[dict]:
    """The project's figures in each pool it may use (zeros where it holds nothing) and in any
    other pool it holds something in (a node moved to another pool under a running job)."""
    allowed = [pool for pool in known if not project.node_pools or pool in project.node_pools]
    rows = []
    for pool in sorted({*allowed, *held}):
        row = held.get(pool) or dict.fromkeys(POOL_FIGURES, 0)
        rows.append({"pool": pool, **row, "allocated_gpus": round(row["allocated_gpus"], 3)})
    return rows


def _projects(projects, requests: dict[str, tuple[int, int]],
              pools: dict[str, dict[str, dict]], known: list[str]) -> list[dict]:  # fmt: skip
    newest = UsageSample.objects.filter(project=OuterRef("pk")).order_by("-time", "-id")
    annotated = with_usage(projects).annotate(
        utilization=Subquery(newest.values("utilization")[:1]),
        utilization_simulated=Subquery(newest.values("simulated")[:1]),
    )
    rows = []
    # grouped by department (top-level projects first), as the departments divide fair share
    for project in annotated.order_by(F("department__name").asc(nulls_first=True), "name"):
        allocated = round(float(project.allocated or 0), 3)
        quota = float(project.quota)
        rows.append(
            {
                "name": project.name,
                "department": project.department.name if project.department else None,
                "quota": quota,
                "over_quota_weight": _num(project.over_quota_weight),
                "limit": _num(project.limit),
                "fair_share": round(project.fair_share, 3),
                "allocated_gpus": allocated,
                "over_quota_gpus": round(max(allocated - quota, 0.0), 3),
                "running_jobs": project.running,
                "pending_jobs": project.pending,
                "utilization": project.utilization,
                "utilization_simulated": bool(project.utilization_simulated),
                "allocated_cpu_millis": requests.get(project.name, (0, 0))[0],
                **memory_figure("allocated_memory", requests.get(project.name, (0, 0))[1]),
                "cpu_limit_millis": project.cpu_limit_millis,
                **memory_figure("memory_limit", project.memory_limit_bytes),
                "pools": _pool_rows(project, pools.get(project.name, {}), known),
            }
        )
    return rows


def _job(job: Job, now) -> dict:
    return {
        "project": job.project.name,
        "name": job.name,
        "user": job.user.get_username() if job.user else None,
        "type": job.type,
        "gpus": float(job.gpus),
        "pods": job.pods,
        "status": job.status,
        "allocated_gpus": round(job.allocated_gpus, 3),
        "nodes": job.nodes,
        "submitted_at": job.submitted_at.isoformat(),
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "wait_s": round(max(((job.started_at or now) - job.waiting_since).total_seconds(), 0.0), 1),
        "pending_reason": job.pending_reason,
        "stuck": job.stuck,
        "expected_s": job.expected_s,  # predicted run time (scheduler.predict)
        "eta": job.shown_eta.isoformat() if job.shown_eta else None,  # start while pending
        "eta_kind": job.eta_kind,  # "at", "not_before", "never" or "" (Job.eta_kind)
        "expected_start": job.expected_start,  # the same in words, with what it rests on
    }


def _running(job: Job, figures, now) -> dict:
    row = _job(job, now)
    row["run_s"] = round(max((now - job.started_at).total_seconds(), 0.0), 1)
    row["utilization"] = figures.job(job.project.name, job.name)
    row["gpu_memory_used_bytes"] = figures.job_memory_used(job.project.name, job.name)
    row["utilization_simulated"] = figures.simulated
    return row


ATTENTION_WINDOW = timedelta(hours=24)  # failed and timed-out jobs shown this long


def _attention(running: list[dict], now) -> dict:
    """The triage panels: jobs holding idle GPUs, and stuck, failed or timed-out jobs."""
    idle = [job for job in running if job["status"] == Status.RUNNING
            and job["utilization"] is not None and job["utilization"] < IDLE_BELOW]  # fmt: skip
    troubled = [{**job, "problem": "stuck: no new output or progress"}
                for job in running if job["stuck"]]  # fmt: skip
    last_event = JobEvent.objects.filter(job=OuterRef("pk")).order_by("-time", "-id")
    ended = (
        Job.objects.filter(status__in=[Status.FAILED, Status.TIMED_OUT],
                           finished_at__gte=now - ATTENTION_WINDOW)
        .select_related("project", "user")
        .annotate(last_message=Subquery(last_event.values("message")[:1]))
        .order_by("-finished_at")[:100]
    )  # fmt: skip
    troubled += [{**_job(job, now), "problem": job.last_message or job.status} for job in ended]
    return {"idle": idle, "troubled": troubled}


def _pending(now) -> list[dict]:
    """Every pending job with its place in its project's queue (R4.3: priority, then age)."""
    jobs = Job.objects.filter(status=Status.PENDING).select_related("project", "user")
    queues: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        queues[job.project.name].append(job)
    rows = []
    for queue in queues.values():
        queue.sort(key=lambda job: (-_priority(job), job.id))
        for position, job in enumerate(queue, start=1):
            row = _job(job, now)
            row["queue_position"] = position
            row["queue_length"] = len(queue)
            rows.append(row)
    rows.sort(key=lambda row: row["submitted_at"])
    return rows


def _priority(job: Job) -> int:
    """The R7.1 priority value: the type's class plus the job's own priority."""
    base = BUILD_PRIORITY if job.type == JobType.INTERACTIVE else TRAIN_PRIORITY
    return base + (job.priority or 0)


def _nodes(nodes: list[Node], holding: list[Job], figures) -> list[dict]:
    on_device: dict[str, dict[int, list[dict]]] = defaultdict(lambda: defaultdict(list))
    requests: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for job in holding:
        for pod in job.placed_pods:
            requests[pod.node][0] += job.cpu_millis
            requests[pod.node][1] += job.memory_bytes
            for index in pod.devices:
                on_device[pod.node][index].append(
                    {"project": job.project.name, "name": job.name, "share": pod.share}
                )
    rows = []
    for node in nodes:
        if not figures.at:
            measured = None
        elif figures.simulated:  # the simulated agent reports busy devices; the rest are idle
            measured = figures.devices.get(node.name, {})
        else:  # a real cluster: only what the DCGM exporter measured, never a made-up 0
            measured = figures.devices.get(node.name) or None
        devices, failed = [], node.out_of_service
        # the devices the scheduler counts as held outside Allot: the highest free ones (R2.6)
        outside = set(outside_devices(node.gpus, node.outside_gpus,
                                      {*failed, *on_device[node.name]}))  # fmt: skip
        memory = figures.device_memory.get(node.name, {}) if figures.at else {}
        for index in range(node.gpus):
            jobs = on_device[node.name].get(index, [])
            idle = 0.0 if figures.simulated else None
            utilization = None if measured is None else measured.get(index, idle)
            devices.append(
                {
                    "index": index,
                    "allocated": round(min(sum(job["share"] for job in jobs), 1.0), 3),
                    "utilization": utilization,
                    "memory_used_bytes": memory.get(index),  # measured only, else None
                    "jobs": jobs,
                    "failed": index in failed,
                    "outside": index in outside,
                }
            )
        known = [device["utilization"] for device in devices if device["utilization"] is not None]
        rows.append(
            {
                "name": node.name,
                "pool": node.pool,
                "ready": figures.ready.get(node.name, node.ready) if node.ready else False,
                "schedulable": node.takes_new_pods,
                "gpu_product": node.gpu_product,
                "gpus": node.gpus,
                **memory_figure("gpu_memory", node.gpu_memory_bytes, floor=True),
                "allocated_gpus": round(sum(device["allocated"] for device in devices), 3),
                "utilization": round(sum(known) / len(known), 3) if known else None,
                "utilization_simulated": figures.simulated,
                "devices": devices,
                "failed_devices": failed,
                "outside_gpus": len(outside),
                "cpu_millis": node.cpu_millis,
                **memory_figure("memory", node.memory_bytes, floor=True),
                "allocated_cpu_millis": requests[node.name][0],
                **memory_figure("allocated_memory", requests[node.name][1]),
                "outside_cpu_millis": node.outside_cpu_millis,
                **memory_figure("outside_memory", node.outside_memory_bytes),
            }
        )
    return rows


def _num(value) -> float | None:
    return float(value) if value is not None else None
