"""Every write to jobs goes through these verbs (the API and the cycle call them).

Each runs in one transaction and asks for a scheduling cycle once it has committed, so the
scheduler never sees half of a change.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Q
from django.http import Http404

from portal.audit import services as audit
from portal.core import clock
from portal.core.errors import conflict
from portal.core.trigger import request_cycle_on_commit
from portal.jobs.health import POLICY_FIELDS, HealthPolicy, resolve
from portal.jobs.models import ACTIVE, HOLDING, Job, JobEvent, JobRun, RunEnd, Status
from portal.tenancy.models import Project
from portal.tenancy.userlimits import in_force_in
from scheduler.quantity import cores_text, memory_text


def new_event(job: Job, kind: str, message: str, time: datetime | None = None) -> JobEvent:
    """An unsaved event of `job` (for bulk_create); `time` defaults to now."""
    return JobEvent(
        time=time or clock.now(),
        job=job,
        project_id=job.project_id,
        job_name=job.name,
        kind=kind,
        message=message,
    )


def record_event(job: Job, kind: str, message: str, time: datetime | None = None) -> JobEvent:
    """Store one event of `job` (kind: submitted, scheduled, running, evicted, ...)."""
    event = new_event(job, kind, message, time)
    event.save()
    return event


def submit_job(user, project: Project, **fields) -> Job:
    """Store a new Pending job of `project` submitted by `user`; 409 when the name is taken.

    `fields` are the validated job fields (name, type, gpus, pods, priority, image, ...).
    """
    name = fields["name"]
    try:
        with transaction.atomic():  # a taken name fails the INSERT (unique project and name)
            refuse_over_pending_caps(user, {project: 1})
            job = Job.objects.create(project=project, user=user, status=Status.PENDING, **fields)
            who = user.get_username() if user else "someone"
            record_event(job, "submitted", f"submitted by {who}: {_shape(job)}", job.submitted_at)
            audit.record("job.submitted", job, note=_shape(job))
            request_cycle_on_commit()
    except IntegrityError:
        raise conflict("name", f"a job named {name!r} already exists in {project.name}") from None
    return job


def submit_jobs(user, entries: list[tuple[Project, dict]]) -> list[Job]:
    """Store many new Pending jobs at once (a sweep), all or none, in a few statements: one
    INSERT of the jobs, one of their events, one cycle asked for.

    `entries` are (project, validated fields) pairs whose names differ within a project; a name
    already taken is a 409 naming the first such job, and nothing is stored.
    """
    who = user.get_username() if user else "someone"
    try:
        with transaction.atomic():
            wanted: dict[Project, int] = {}
            for project, _ in entries:
                wanted[project] = wanted.get(project, 0) + 1
            refuse_over_pending_caps(user, wanted)
            _refuse_taken(entries)
            jobs = Job.objects.bulk_create(
                Job(project=project, user=user, status=Status.PENDING, **fields)
                for project, fields in entries
            )
            JobEvent.objects.bulk_create(
                new_event(job, "submitted", f"submitted by {who}: {_shape(job)}", job.submitted_at)
                for job in jobs
            )
            audit.record_many("job.submitted", jobs, note="bulk submission")
            request_cycle_on_commit()
    except IntegrityError:  # a concurrent submission took a name between check and insert
        raise conflict("jobs", "a job of this batch was submitted meanwhile; retry") from None
    return jobs


def refuse_over_pending_caps(user, wanted: dict[Project, int]) -> None:
    """A 409 naming the cap when `wanted` more pending jobs would take `user` past
    ALLOT_MAX_PENDING_PER_USER, past a project's per-user limit `max_pending` (issue 36), or a
    project past ALLOT_MAX_PENDING_PER_PROJECT (issue 32 item 8: one researcher's 2,000 queued
    jobs slowed every other user's overview). Submissions of one user and of one project take
    a lock of their own first (PostgreSQL advisory locks, held to the end of the transaction,
    in one order; SQLite has one writer at a time anyway), so two at once cannot both pass a
    cap - and never the rows' locks, which a scheduling cycle holds while it commits (a
    submission during a cycle returns at once); call inside the submission's transaction.
    The caps are then counted in one query (`_pending_counts`)."""
    projects = sorted(wanted, key=lambda project: project.pk)
    known = user is not None and user.pk is not None
    user_lock = [(USER_LOCKS, user.pk)] if known else []
    _serialize(user_lock + [(PROJECT_LOCKS, project.pk) for project in projects])
    limits = {}  # each project's per-user pending cap for `user` (None: none)
    if known:
        in_force = in_force_in(projects, user)
        limits = {project: in_force[project.pk]["max_pending"] for project in projects}
    limited = [project for project, cap in limits.items() if cap is not None]
    counts = _pending_counts(user if known else None, projects, limited)
    if known:
        mine, cap = counts["user"], settings.ALLOT_MAX_PENDING_PER_USER
        if mine + sum(wanted.values()) > cap:
            raise conflict(
                "pending",
                (
                    f"{user.get_username()} has {mine} pending jobs and asks for "
                    f"{sum(wanted.values())} more: at most {cap} may wait per user "
                    "(ALLOT_MAX_PENDING_PER_USER); wait for some to start, or delete some"
                ),
            )
        for project in projects:
            _refuse_over_user_limit(user, project, wanted[project], limits[project], counts)
    cap = settings.ALLOT_MAX_PENDING_PER_PROJECT
    for project in projects:
        waiting = counts[f"project_{project.pk}"]
        if waiting + wanted[project] > cap:
            raise conflict(
                "pending",
                (
                    f"{project.name} has {waiting} pending jobs and this asks for "
                    f"{wanted[project]} more: at most {cap} may wait per project "
                    "(ALLOT_MAX_PENDING_PER_PROJECT)"
                ),
            )


def _pending_counts(user, projects: list[Project], limited: list[Project]) -> dict[str, int]:
    """Pending jobs counted in one query (issue 39: a submission asked two or three): `user`'s
    ("user", unless None), each project's ("project_<pk>") and `user`'s in each `limited`
    project ("user_in_<pk>")."""
    counts = {f"project_{p.pk}": Count("pk", filter=Q(project_id=p.pk)) for p in projects}
    where = Q(project_id__in=[project.pk for project in projects])
    if user is not None:
        counts["user"] = Count("pk", filter=Q(user_id=user.pk))
        counts |= {
            f"user_in_{project.pk}": Count("pk", filter=Q(project_id=project.pk, user_id=user.pk))
            for project in limited
        }
        where |= Q(user_id=user.pk)
    return Job.objects.filter(where, status=Status.PENDING).aggregate(**counts)


def _refuse_over_user_limit(user, project: Project, asked: int, cap, counts: dict) -> None:
    """A 409 naming the project's per-user limit `max_pending` (issue 36) when `asked` more
    pending jobs would take `user` past it in `project`; no limit set (`cap` None): nothing."""
    if cap is None:
        return
    mine = counts[f"user_in_{project.pk}"]
    if mine + asked > cap:
        raise conflict(
            "pending",
            (
                f"{user.get_username()} has {mine} pending jobs in {project.name} and asks for "
                f"{asked} more: at most {cap} may wait per user in {project.name} (its per-user "
                "limit max_pending); wait for some to start, or delete some"
            ),
        )


USER_LOCKS, PROJECT_LOCKS = 32081, 32082  # advisory lock spaces of the pending caps


def _serialize(locks: list[tuple[int, int]]) -> None:
    """Take PostgreSQL's transaction advisory locks (space, id) `locks` in order (spaces, then
    ids), in one statement: `unnest` yields the pairs in the arrays' order and each row's lock
    is taken before the next row is read."""
    if connection.vendor != "postgresql" or not locks:
        return
    spaces, ids = zip(*sorted(locks), strict=True)
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_advisory_xact_lock(space, id)) FROM unnest(%s::int[], %s::int[])"
            " AS locks(space, id)",
            [list(spaces), list(ids)],
        )


def _refuse_taken(entries: list[tuple[Project, dict]]) -> None:
    wanted = {(project.id, fields["name"]) for project, fields in entries}
    taken = Job.objects.filter(
        project_id__in={project_id for project_id, _ in wanted},
        name__in={name for _, name in wanted},
    ).values_list("project_id", "name", "project__name")
    for project_id, name, project_name in taken:
        if (project_id, name) in wanted:
            raise conflict("jobs", f"a job named {name!r} already exists in {project_name}")


def stop_job(job: Job, user=None) -> Job:
    """Stop `job`: its run ends and its GPUs are free once this commits; the job stays, Stopped,
    with its spec, events and runs, its name still taken, until resumed or deleted.

    A Pending job stops before it ever runs; a job that has already ended is a 409 naming its
    status. The next cycle's reconciliation stops the job's pods (the database no longer says it
    holds GPUs) and never plans it again (the snapshot reads Pending and holding jobs only).
    """
    with transaction.atomic():
        locked = _locked(job)
        if locked.status not in ACTIVE:
            raise conflict(
                "status",
                f"job {locked.project.name}/{locked.name} is "
                f"{locked.status}; only a pending or running job is stopped",
            )
        now, was, held = clock.now(), locked.status, locked.allocated_gpus
        if locked.holds_gpus and locked.started_at is not None:  # the run's GPU-time stays (L1)
            locked.held_gpu_s += held * max(0.0, (now - locked.started_at).total_seconds())
        locked.status, locked.placement, locked.finished_at = Status.STOPPED, [], now
        locked.pending_reason, locked.eta, locked.expected_end = "", None, None
        locked.save(update_fields=["status", "placement", "finished_at", "pending_reason", "eta",
                                   "expected_end", "held_gpu_s"])  # fmt: skip
        JobRun.objects.filter(job=locked, ended_at__isnull=True).update(
            ended_at=now, end=RunEnd.STOPPED, ended_by=_who(user), reason=f"stopped by {_who(user)}"
        )  # its logs are kept by the cycle that stops its pods (portal.scheduling.runs)
        freed = f"; freed {held:g} GPUs" if held else ""
        if locked.is_external:  # issue 33: its owner makes new pods; they are held
            freed += (f"; its pods are evicted, and new ones {locked.external_kind} "
                      f"{locked.external_owner} makes wait until it is resumed")  # fmt: skip
        record_event(locked, "stopped", f"stopped by {_who(user)} while {was}{freed}", now)
        audit.record("job.stopped", locked, changes={"status": [was, locked.status]})
        request_cycle_on_commit()
    return locked


def resume_job(job: Job, user=None) -> Job:
    """Queue a Stopped job again with the same spec: Pending, its wait counting from now.

    It keeps its id, so it keeps its place in its project's queue (as an evicted job does); any
    other status is a 409 naming it, and so is a queue its owner may not lengthen (the pending
    caps, as at submission: else stopping and resuming would pass them).
    """
    with transaction.atomic():
        locked = _locked(job)
        if locked.status != Status.STOPPED:
            raise conflict("status", f"job {locked.project.name}/{locked.name} is "
                           f"{locked.status}; only a Stopped job is resumed")  # fmt: skip
        refuse_over_pending_caps(locked.user, {locked.project: 1})  # it waits again: counted
        now = clock.now()
        for name, value in RESUMED.items():
            setattr(locked, name, value)
        locked.queued_at = now
        locked.save(update_fields=[*RESUMED, "queued_at"])
        record_event(locked, "resumed", f"resumed by {_who(user)}: queued again, same spec", now)
        audit.record("job.resumed", locked, changes={"status": [Status.STOPPED, locked.status]})
        request_cycle_on_commit()
    return locked


# A resumed job's run-time fields, as a new submission has them (its history stays in events).
RESUMED = {
    "status": Status.PENDING, "placement": [], "started_at": None, "finished_at": None,
    "pending_reason": "", "idle_since": None, "warned_for": "", "extended_s": 0, "activity": "",
    "active_at": None, "stuck": False, "backfilled": False, "expected_end": None, "eta": None,
}  # fmt: skip


def delete_job(job: Job, user=None, who: str | None = None) -> None:
    """Delete `job` whatever its status: a running one is stopped, its GPUs are free once this
    commits, its name can be reused; its events and runs stay (`job` null, project and name
    kept; a run going on ends now, and the runs' logs go). `who` names who deleted it when it
    is not a user (an external workload's owner, issue 33).

    A person does not delete a pending or running external workload (its owner does: its pods
    would come back as a new one): that is a 409 that says how; Stop holds it instead.

    The next cycle stops the agent's pods of jobs the database no longer has and reuses the freed
    devices.
    """
    with transaction.atomic():
        locked = Job.objects.select_for_update().filter(id=job.id).first()
        if locked is None:
            return  # deleted concurrently: the outcome the caller asked for
        if who is None and locked.is_external and locked.status in ACTIVE:
            raise conflict("status", external_delete_refusal(locked))
        who = who or _who(user)
        freed = f"; freed {locked.allocated_gpus:g} GPUs" if locked.holds_gpus else ""
        record_event(locked, "deleted", f"deleted by {who} while {locked.status}{freed}")
        audit.record("job.deleted", locked, changes={"status": [locked.status, None]})
        # its runs stay for the GPU-hour accounting: one going on ends now; the logs go
        JobRun.objects.filter(job=locked, ended_at__isnull=True).update(
            ended_at=clock.now(), end=RunEnd.STOPPED, ended_by=who[:200],
            reason="the job was deleted",
        )  # fmt: skip
        JobRun.objects.filter(job=locked).update(logs="")
        locked.delete()
        request_cycle_on_commit()


def external_delete_refusal(job: Job) -> str:
    """Why a person does not delete a live external workload, and what to do instead."""
    return (
        f"{job.project.name}/{job.name} is {job.external_kind} {job.external_owner} in namespace "
        f"{job.external_namespace}, made outside Allot: its owner deletes it (kubectl delete "
        f"{job.external_kind.lower()} {job.external_owner} -n {job.external_namespace}); Stop "
        "evicts its pods and holds the new ones its owner makes until it is resumed"
    )


def _locked(job: Job) -> Job:
    """`job` read again under a row lock (its project joined); 404 when deleted meanwhile."""
    locked = (
        Job.objects.select_for_update(of=("self",))
        .select_related("project", "user")
        .filter(id=job.id)
        .first()
    )
    if locked is None:
        raise Http404(f"Job {job.project.name}/{job.name} not found.")
    return locked


def _who(user) -> str:
    return user.get_username() if user else "the system"


def project_health(project) -> HealthPolicy:
    """The project's job health policies in force (its own, else its department's)."""
    own = {field: getattr(project, field) for field in POLICY_FIELDS}
    department = project.department
    inherited = (
        {field: getattr(department, field) for field in POLICY_FIELDS} if department else None
    )
    return resolve(own, inherited)


def extend_job(job: Job, user) -> Job:
    """Move every health deadline of a running job back by the project's extension, once."""
    with transaction.atomic():
        locked = (
            Job.objects.select_for_update(of=("self",))
            .select_related("project__department")
            .filter(id=job.id)
            .first()
        )
        if locked is None or locked.status not in HOLDING:
            status = locked.status if locked else "gone"
            raise conflict("status", f"job {job.name} is {status}; only a running job is extended")
        extension = project_health(locked.project).timeout_extension_s
        if not extension:
            raise conflict("detail", f"project {locked.project.name} does not allow extensions")
        if locked.extended_s:
            raise conflict("detail", f"job {locked.name} was extended once already "
                                     f"(by {locked.extended_s} s)")  # fmt: skip
        locked.extended_s, locked.warned_for = extension, ""
        locked.save(update_fields=["extended_s", "warned_for"])
        who = user.get_username() if user else "the system"
        record_event(locked, "extended",
                     f"extended by {who}: its time limits and idle timeout end {extension} s "
                     "later (once)")  # fmt: skip
    return locked


def _shape(job: Job) -> str:
    """'2 pods x 0.5 GPU, 4 cores, 16 GiB memory, train' — what was asked for, for the submitted
    event (CPU and memory when asked, issue 26)."""
    pods = f"{job.pods} pods x " if job.pods > 1 else ""
    asked = [f"{float(job.gpus):g} GPU"]
    if job.gpu_memory_bytes:
        asked[0] += f" ({memory_text(job.gpu_memory_bytes)} of GPU memory)"
    if job.cpu_millis:
        asked.append(cores_text(job.cpu_millis))
    if job.memory_bytes:
        asked.append(f"{memory_text(job.memory_bytes)} memory")
    return f"{pods}{', '.join(asked)}, {job.type}"
