"""Workloads other tools made, scheduled by Allot (issue 33): a Job row for each, kept in step.

A pod another tool made (`kubectl apply` of a Pod, a batch/v1 Job, a JobSet, a Deployment...)
with `spec.schedulerName: allot` belongs to the project whose namespace it is in: the project's
own (`allot-<project>`) or one an admin mapped to it (`Project.namespaces`), as Run:AI maps
namespaces to projects. The agent groups such pods by their top owner (`agents.base.Workload`);
each group becomes a Job row of its project, marked external (its kind, owner and namespace), and
is then scheduled like any job: quota, fair share, reclaim, preemption, consolidation, accounting.

- `sync` (every cycle, before the database is read under the lock): a row for every new group,
  its shape followed while it waits, and the row of a group whose owner deleted it is deleted
  (its history stays, as for a job a user deletes). A group that vanishes for less than
  `GONE_GRACE_S` is not deleted: a Job's pods evicted by Allot are gone for a moment before the
  Job controller makes new ones.
- `explain` (after the cycle told the cluster what to do): why each waiting group waits, which
  the agent writes on its pods (an Event and the PodScheduled condition), so `kubectl describe
  pod` says what the portal says; a group in a namespace no project owns is told so.

Allot never creates or deletes such a workload: starting it binds its pods, stopping it evicts
them, and their owner makes new ones, which wait for Allot again.
"""

from __future__ import annotations

import hashlib
import logging
import time
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Q

from agents.base import Agent, Observation, Workload
from agents.kubernetes.names import namespace_for
from portal.cluster.models import Node
from portal.cluster.topology import constraint, default_for, pool_defaults
from portal.core.validators import NAME_MAX
from portal.jobs import resources as job_resources
from portal.jobs.models import ACTIVE, Job, Status
from portal.jobs.services import delete_job, record_event
from portal.tenancy.models import Project

logger = logging.getLogger(__name__)

PER_POD = frozenset({"Deployment", "ReplicaSet"})  # kinds whose pods are placed one by one
GONE_GRACE_S = 10.0  # a group seen again within this is the same run (its pods being remade)
_gone_since: dict[str, float] = {}  # uid -> when this process first missed it


def namespace_projects() -> dict[str, Project]:
    """Every namespace a project owns: its own `allot-<name>` and those mapped to it (the
    oldest project keeps a namespace two claim; setting one checks that none does)."""
    owners: dict[str, Project] = {}
    for project in Project.objects.order_by("id"):
        for namespace in (namespace_for(project.name), *(project.namespaces or ())):
            owners.setdefault(namespace, project)
    return owners


def sync(observation: Observation, monotonic=time.monotonic) -> None:
    """Make the external Job rows match the workloads `observation` saw (module docstring).

    Only a complete view is acted on: a partial one (`synced` False, or the cluster unreachable)
    would delete the rows of groups it merely did not see."""
    if not observation.synced or observation.problem:
        return
    seen = {workload.ref.uid: workload for workload in observation.workloads}
    owners = namespace_projects() if seen else {}  # every project read: only when there are some
    rows = {
        row["external_uid"]: row
        for row in Job.objects.filter(
            Q(external_uid__in=list(seen)) | (~Q(external_uid="") & Q(status__in=ACTIVE))
        ).values(
            "id", "external_uid", "status", "pods", "gpus", "cpu_millis", "memory_bytes", "topology"
        )
    }
    defaults = pool_defaults() if seen else ({}, set())  # read once per cycle, not per group
    now = monotonic()
    for uid, row in rows.items():
        if uid in seen:
            _gone_since.pop(uid, None)
            if row["status"] == Status.PENDING:
                _follow(row, seen[uid], owners, defaults)
        elif row["status"] in ACTIVE and now - _gone_since.setdefault(uid, now) >= GONE_GRACE_S:
            _gone_since.pop(uid, None)
            _forget(row["id"])
    for uid, workload in seen.items():
        project = owners.get(workload.ref.namespace)
        if uid not in rows and project is not None and not workload.complete:
            if not refusal(workload):
                _adopt(project, workload, observation.at, defaults)


def refusal(workload: Workload) -> str:
    """Why Allot cannot schedule `workload` as it is ("" when it can)."""
    if not (workload.gpus > 0 or workload.gpu_memory_bytes or workload.cpu_millis
            or workload.memory_bytes):  # fmt: skip
        return (
            "its pods request no GPU, CPU or memory: Allot schedules what asks for resources "
            "(give resources.requests, e.g. nvidia.com/gpu: 1)"
        )
    if workload.gpus > 1 and workload.gpus != int(workload.gpus):
        return f"{workload.gpus:g} GPUs per pod: a pod takes a fraction of one GPU or whole GPUs"
    return ""


def explain(agent: Agent, observation: Observation) -> None:
    """Tell the cluster why each external workload waits (module docstring)."""
    if not observation.workloads:
        return
    owners = namespace_projects()
    waiting: dict[str, str] = {}
    pending = {}
    for workload in observation.workloads:
        if all(pod.node for pod in workload.pods) or workload.complete:
            continue  # placed (or over): nothing to explain
        namespace = workload.ref.namespace
        project = owners.get(namespace)
        if project is None:
            waiting[workload.ref.uid] = (
                f"namespace {namespace} belongs to no Allot project: an admin maps it to one "
                "(the project's Kubernetes namespaces), or the workload goes in allot-<project>"
            )
        elif refusal(workload):
            waiting[workload.ref.uid] = f"Allot cannot schedule it: {refusal(workload)}"
        else:
            pending[workload.ref.uid] = project
    if pending:
        rows = Job.objects.filter(external_uid__in=list(pending)).values_list(
            "external_uid", "status", "pending_reason", "project__name", "name"
        )
        for uid, status, reason, project, name in rows:
            if status == Status.PENDING:
                waiting[uid] = f"{project}/{name} waits: {reason or 'for the next cycle'}"
            elif status == Status.STOPPED:
                waiting[uid] = (
                    f"{project}/{name} is stopped in Allot: it is placed again once resumed"
                )
    if waiting:
        agent.explain(waiting)


def _adopt(project: Project, workload: Workload, at: datetime, defaults: tuple) -> None:
    """A Pending Job row for a new external workload (none when another process made it)."""
    fields = _shape(workload, project, defaults)
    ref = workload.ref
    try:
        with transaction.atomic():
            job = Job.objects.create(
                project=project, name=_free_name(project, workload), status=Status.PENDING,
                queued_at=at, external_uid=ref.uid, external_kind=ref.kind[:63],
                external_owner=ref.owner[:253], external_namespace=ref.namespace[:63], **fields,
            )  # fmt: skip
            size = f"{workload.size} pods" if workload.size > 1 else "1 pod"
            record_event(
                job, "submitted",
                f"{ref.kind} {ref.owner} in namespace {ref.namespace} asks Allot to place it "
                f"({size}, made outside Allot)", at,
            )  # fmt: skip
    except IntegrityError:  # another process adopted it first (the uid is unique)
        logger.info("external workload %s adopted elsewhere", ref.uid)


def _shape(workload: Workload, project: Project, defaults: tuple) -> dict:
    """The Job row fields a workload's requests give (gpus as Allot's own jobs store them), and
    its topology constraint: its annotations' (KAI's, Kueue's, Allot's), else for a gang its
    project's or its pools' default, as a job submitted without one gets (issue 38)."""
    topology = constraint(workload.topology_required, workload.topology_preferred)
    if not topology and workload.size > 1:
        topology = default_for(project, defaults)
    if workload.gpu_memory_bytes:
        smallest = _smallest_device_bytes()
        gpus = job_resources.gpu_memory_share(workload.gpu_memory_bytes, smallest)
    else:
        gpus = workload.gpus
    return {
        "type": "interactive" if workload.type in ("build", "interactive") else "train",
        "gpus": round(gpus, 2),
        "pods": max(workload.size, 1),
        "gpu_memory_bytes": workload.gpu_memory_bytes,
        "cpu_millis": workload.cpu_millis,
        "memory_bytes": workload.memory_bytes,
        "cpu_limit_millis": workload.cpu_limit_millis,
        "memory_limit_bytes": workload.memory_limit_bytes,
        "topology": topology,
    }


def _smallest_device_bytes() -> int | None:
    memories = Node.objects.filter(gpus__gt=0).values_list("gpu_memory_bytes", flat=True)
    return min(memories, default=None)


def _follow(row: dict, workload: Workload, owners: dict[str, Project], defaults: tuple) -> None:
    """A waiting row follows its workload's shape (a Job's parallelism changed, say)."""
    if workload.ref.namespace not in owners or refusal(workload):
        return
    fields = _shape(workload, owners[workload.ref.namespace], defaults)
    current = {key: row[key] for key in ("pods", "cpu_millis", "memory_bytes", "topology")}
    wanted = {key: fields[key] for key in current}
    if current != wanted or float(row["gpus"]) != float(fields["gpus"]):
        Job.objects.filter(id=row["id"], status=Status.PENDING).update(**fields)


def _forget(job_id: int) -> None:
    """Delete the row of a workload its owner deleted (its events and runs stay)."""
    job = Job.objects.select_related("project").filter(id=job_id).first()
    if job is not None:
        delete_job(job, who=f"its owner ({job.external_kind} {job.external_owner} is gone)")


def _free_name(project: Project, workload: Workload) -> str:
    """A job name for the workload: its owner's name (a Deployment's pod: the pod's) when it is
    a free DNS label of at most NAME_MAX characters, else a cut of it with a hash of the group's
    uid."""
    owner = workload.ref.owner
    if workload.ref.kind in PER_POD and len(workload.pods) == 1:  # each pod is its own job
        owner = workload.pods[0].name
    base = "".join(c if c.isalnum() or c == "-" else "-" for c in owner.lower())
    base = base.strip("-") or "workload"
    taken = Job.objects.filter(project=project, name=base[:NAME_MAX]).exists()
    if len(base) <= NAME_MAX and not taken:
        return base
    digest = hashlib.sha256(workload.ref.uid.encode()).hexdigest()[:6]
    return f"{base[: NAME_MAX - 7].rstrip('-')}-{digest}"
