"""Everything the overview dashboard shows, as one JSON-ready dict.

Built per user: cluster totals and nodes are the same for everyone; projects and jobs are those
the user may see, and a device shows the names of visible jobs only. `build_overview()` with no
user is the cluster admin's view, which the cycle broadcasts to the "overview" group.
"""

from __future__ import annotations

from django.conf import settings
from django.db.models import OuterRef, Subquery
from django.utils import timezone

from portal.cluster.models import Node
from portal.cluster.serializers import device_use, devices_of
from portal.jobs.models import HOLDING, Job, Status, UsageSample
from portal.tenancy import access
from portal.tenancy.models import Project
from portal.tenancy.queries import with_usage

JOBS_SHOWN = 1000  # per list; the totals count them all


def build_overview(user=None) -> dict:
    """Cluster totals, projects, running and pending jobs, and nodes with their devices."""
    admin = user is None or access.is_cluster_admin(user)
    projects = Project.objects.all() if admin else access.projects_for(user)
    visible_ids = set(projects.values_list("id", flat=True))
    holding = list(Job.objects.filter(status__in=HOLDING).select_related("project", "user"))
    nodes = list(Node.objects.all())
    return {
        "generated_at": timezone.now().isoformat(),
        "simulated": settings.ALLOT_AGENT == "simulated",
        "cluster": _cluster(nodes, holding),
        "projects": _projects(projects),
        "running": [_job(job) for job in holding if job.project_id in visible_ids][:JOBS_SHOWN],
        "pending": _pending(visible_ids),
        "nodes": _nodes(nodes, holding, visible_ids),
    }


def _cluster(nodes: list[Node], holding: list[Job]) -> dict:
    total = sum(node.gpus for node in nodes)
    ready = sum(node.gpus for node in nodes if node.ready)
    allocated = round(sum(job.allocated_gpus for job in holding), 3)
    return {
        "nodes": len(nodes),
        "ready_nodes": sum(1 for node in nodes if node.ready),
        "gpus": total,
        "ready_gpus": ready,
        "allocated_gpus": allocated,
        "free_gpus": round(max(ready - allocated, 0.0), 3),
        "running_jobs": len(holding),
        "pending_jobs": Job.objects.filter(status=Status.PENDING).count(),
    }


def _projects(projects) -> list[dict]:
    newest = UsageSample.objects.filter(project=OuterRef("pk")).order_by("-time", "-id")
    annotated = with_usage(projects).annotate(
        utilization=Subquery(newest.values("utilization")[:1]),
        utilization_simulated=Subquery(newest.values("simulated")[:1]),
    )
    return [
        {
            "name": project.name,
            "quota": float(project.quota),
            "over_quota_weight": _num(project.over_quota_weight),
            "limit": _num(project.limit),
            "fair_share": round(project.fair_share, 3),
            "allocated_gpus": round(float(project.allocated or 0), 3),
            "running_jobs": project.running,
            "pending_jobs": project.pending,
            "utilization": project.utilization,
            "utilization_simulated": bool(project.utilization_simulated),
        }
        for project in annotated
    ]


def _pending(visible_ids: set[int]) -> list[dict]:
    jobs = (
        Job.objects.filter(status=Status.PENDING, project_id__in=visible_ids)
        .select_related("project", "user")
        .order_by("id")[:JOBS_SHOWN]
    )
    return [_job(job) for job in jobs]


def _job(job: Job) -> dict:
    end = job.started_at or timezone.now()
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
        "wait_s": round(max((end - job.submitted_at).total_seconds(), 0.0), 1),
        "pending_reason": job.pending_reason,
    }


def _nodes(nodes: list[Node], holding: list[Job], visible_ids: set[int]) -> list[dict]:
    use = device_use(holding)
    visible = lambda job: job.project_id in visible_ids  # noqa: E731
    result = []
    for node in nodes:
        devices = devices_of(node, use, visible)
        result.append(
            {
                "name": node.name,
                "pool": node.pool,
                "ready": node.ready,
                "schedulable": node.schedulable,
                "gpus": node.gpus,
                "gpu_memory_mib": node.gpu_memory_mib,
                "allocated_gpus": round(sum(device["allocated"] for device in devices), 3),
                "devices": devices,
            }
        )
    return result


def _num(value) -> float | None:
    return float(value) if value is not None else None
