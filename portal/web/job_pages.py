"""Researchers' pages: jobs, submit, launch Jupyter, a job's detail (events, runs, logs), and
its stop, resume and delete (the button asks for confirmation: `data-confirm`, page.js).

Jobs are reached through `portal.access` (404 for other teams' jobs) and submitted with
the REST API's serializer and `services.submit_job`, so the page's messages are the API's.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.timesince import timesince
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from agents.sessions import session_path
from portal import access
from portal.api import dry_run
from portal.api.dry_run import Preview
from portal.api.serializers.jobs import JobSerializer
from portal.cluster.topology import landing
from portal.jobs import grants, queries, resources, services
from portal.jobs.models import (
    ACTIVE,
    ENDED,
    Job,
    JobEvent,
    JobRun,
    JobType,
    RunEnd,
    ServiceType,
    SessionGrant,
    Status,
)
from portal.jobs.queries import ACTIVE_STATUSES, HISTORY_FILTERS
from portal.scheduling import lifecycle
from portal.scheduling.agent import get_agent, job_urls
from portal.web import session_origin as origins
from portal.web import session_steps
from portal.web.forms import (
    DURATION,
    ENV,
    FLOAT,
    INTEGER,
    NUMBER,
    PORTS,
    TEXT,
    VOLUMES,
    WORDS,
    field_errors,
    form_input,
    in_labels,
)
from portal.web.sessions import open_later, take_open
from scheduler.bands import band_for
from scheduler.quantity import format_cpu, format_memory

JOB_FIELDS = {
    "project": TEXT, "name": TEXT, "image": TEXT, "gpus": FLOAT, "pods": INTEGER, "type": TEXT,
    "priority": NUMBER, "command": WORDS, "args": WORDS, "environment": ENV, "ports": PORTS,
    "service_type": TEXT, "volumes": VOLUMES, "estimate_s": DURATION, "cpu": TEXT,
    "memory": TEXT, "cpu_limit": TEXT, "memory_limit": TEXT, "gpu_memory": TEXT,
    "topology_required": TEXT, "topology_preferred": TEXT,
}  # fmt: skip
JUPYTER_IMAGE = "jupyter/base-notebook"
JUPYTER_PORT = 8888


class _Request:
    """What JobSerializer's context needs of a request: the user."""

    def __init__(self, user):
        self.user = user


def _submit(request: HttpRequest, data: dict) -> tuple[object | None, dict, Preview | None]:
    """(job, {}, None) when submitted, else (None, errors by field, None), or (None, {},
    preview) when the job would stop running jobs and the form has not confirmed it yet
    (issue 34 item 2: a notebook preempted a teammate's training job without a word; the form
    names them from a dry run of the next cycle and asks). What the REST answer's `warnings`
    would say of the job (it waits for a larger node, or never starts under its project's
    limit: issue 34 item 6) is a warning on the next page."""
    serializer = JobSerializer(data=data, context={"request": _Request(request.user)})
    try:
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        if request.POST.get("confirmed") != "1":
            seen = dry_run.preview(request.user, fields)
            if seen.disruptions:
                return None, {}, seen
        project = fields.pop("project")
        job = services.submit_job(request.user, project, **fields)
    except APIException as exc:
        errors = field_errors(exc)
        if "pending" in errors:  # a queue cap (issue 32 item 8, 36) names no field of the form
            errors.setdefault("form", []).extend(errors.pop("pending"))
        return None, errors, None
    for warning in serializer.context.get("warnings", {}).get((project.name, job.name), []):
        messages.warning(request, f"{job.name}: {warning}.")
    return job, {}, None


def _submittable(user) -> list:
    """The projects where `user` may submit; a 403 saying why when there is none."""
    projects = access.submittable_projects(user)
    if not projects:
        raise PermissionDenied(access.why_not_submit(user))
    return projects


def _free_name(project: str, base: str) -> str:
    """`base`, or `base-2`, `base-3`... : the first name no job of `project` has (issue 24)."""
    base = base.lower()[:36]
    taken = set(Job.objects.filter(project__name=project, name__startswith=base)
                .values_list("name", flat=True))  # fmt: skip
    return next(name for n in range(1, len(taken) + 2)
                if (name := base if n == 1 else f"{base}-{n}") not in taken)  # fmt: skip


PAGE_SIZE = 50
STATUS_GROUPS = {  # the jobs page's status choices beyond single statuses
    ",".join(ACTIVE_STATUSES): "not ended (pending, running, stopped)",
    ",".join(ENDED): "history (ended, stopped)",
}


@login_required
def jobs(request: HttpRequest) -> HttpResponse:
    """Jobs of the user's projects, newest first, a page at a time, finished ones included (until
    ALLOT_JOB_RETENTION_DAYS prunes them): filtered as the API filters them, and "mine"."""
    chosen = {key: request.GET.get(key, "").strip() for key in HISTORY_FILTERS}
    rows, errors = queries.history(access.jobs_for(request.user), chosen)
    mine = request.GET.get("mine") == "1"
    if mine:
        rows = rows.filter(user=request.user)
    if errors:
        rows = rows.none()
    page = Paginator(rows.order_by("-id"), PAGE_SIZE).get_page(request.GET.get("page"))
    query = urlencode({**{k: v for k, v in chosen.items() if v}, **({"mine": 1} if mine else {})})
    return render(
        request,
        "web/jobs.html",
        {"page": "jobs", "jobs": page, "chosen": chosen, "mine": mine, "errors": errors,
         "query": query, "projects": access.projects_for(request.user).order_by("name"),
         "cannot_submit": access.why_not_submit(request.user),
         "status_groups": STATUS_GROUPS, "statuses": Status.values, "types": JobType.values},
        status=400 if errors else 200,
    )  # fmt: skip


# The submit form's labels, which its error messages use instead of the API's field names
# (issue 34 item 5: "give gpus or gpu_memory, not both" named fields the form does not show).
JOB_LABELS = {
    "gpus": "GPUs per pod", "gpu_memory": "GPU memory per pod", "cpu_limit": "CPU limit per pod",
    "memory_limit": "Memory limit per pod", "estimate_s": "Estimated run time",
    "service_type": "Expose ports as", "secret_environment": "Secret environment",
    # "cpu" and "memory" are also words of prose ("40 GiB memory"): only these phrases
    "cpu request": "CPU per pod", "memory request": "Memory per pod",
    "cpu or memory": "CPU per pod or Memory per pod",
}  # fmt: skip
# How the submit form asks for GPUs: a number of GPUs, or a share of one by its memory; the
# other field is not sent (the API takes one of the two, never both).
GPUS_BY = ("gpus", "gpu_memory")


def _preferred_project(user, projects: list) -> str:
    """The project the forms preselect: the one of the user's last job among `projects`, else
    the first they are a member of, else the first (a cluster admin may submit anywhere)."""
    names = [project.name for project in projects]
    last = (Job.objects.filter(user=user, project__name__in=names).order_by("-id")
            .values_list("project__name", flat=True).first())  # fmt: skip
    if last is not None:
        return last
    member = set(user.memberships.values_list("project__name", flat=True))
    return next((name for name in names if name in member), names[0] if names else "")


def _project_defaults(projects: list) -> list[dict]:
    """Each project with the CPU and memory a job of it gets when the form leaves them empty,
    as the form writes them ("4", "32Gi"): the hints of the CPU and memory fields."""
    rows = []
    for project in projects:
        cpu, memory = resources.default_cpu_millis(project), resources.default_memory_bytes(project)
        rows.append({
            "name": project.name, "cpu": format_cpu(cpu) if cpu else "",
            "memory": format_memory(memory) if memory else "",
            "cpu_hint": f"{project.name}'s default, {format_cpu(cpu)}" if cpu else "none asked",
            "memory_hint": (f"{project.name}'s default, {format_memory(memory)}" if memory
                            else "none asked"),
        })  # fmt: skip
    return rows


def _gpu_request(post, data: dict, errors: dict) -> str:
    """Keeps in `data` only the GPU field the form's choice names (`gpus_by`) and returns that
    choice; a chosen field left empty is an error in the form's words. A post without the
    choice keeps both, for the API's check."""
    chosen = post.get("gpus_by")
    if chosen not in GPUS_BY:
        return "gpu_memory" if post.get("gpu_memory", "").strip() else "gpus"
    data.pop(GPUS_BY[1 - GPUS_BY.index(chosen)], None)
    if chosen == "gpu_memory" and not post.get("gpu_memory", "").strip():
        errors.setdefault("gpu_memory", []).append(
            "give the GPU memory each pod needs, such as 20Gi, or ask for GPUs instead"
        )
    return chosen


@login_required
def job_new(request: HttpRequest) -> HttpResponse:
    """The submit form: every field of `POST /api/v1/jobs/`, fractions included. It asks for
    GPUs or for GPU memory (one of the two), preselects the user's own project, and hints the
    chosen project's CPU and memory defaults (issue 34 item 5)."""
    projects = _submittable(request.user)
    chosen = request.GET.get("project") or _preferred_project(request.user, projects)
    errors, preview = {}, None
    values = {"gpus": "1", "pods": "1", "type": JobType.TRAIN, "project": chosen,
              "gpus_by": "gpus"}  # fmt: skip
    if request.method == "POST":
        values = request.POST.dict()
        data, errors = form_input(request.POST, JOB_FIELDS)
        _topology(data)
        values["gpus_by"] = _gpu_request(request.POST, data, errors)
        if not errors:
            job, errors, preview = _submit(request, data)
            if job is not None:
                messages.success(request, f"Job {job.name} submitted.")
                return redirect("job-detail", project=job.project.name, name=job.name)
        errors = in_labels(errors, JOB_LABELS)
    defaults = _project_defaults(projects)
    shown = next((d for d in defaults if d["name"] == values.get("project")), None)
    return render(
        request,
        "web/job_form.html",
        {"page": "jobs", "values": values, "errors": errors, "projects": defaults,
         "defaults": shown or (defaults[0] if defaults else None), "preview": preview,
         "types": JobType.values, "service_types": [v for v in ServiceType.values if v]},
    )  # fmt: skip


def _topology(data: dict) -> None:
    """The form's two topology boxes as the API's `topology` field (issue 38, R23.2, R23.3);
    the serializer names a level no node pool has."""
    wanted = {kind: data.pop(f"topology_{kind}", None) for kind in ("required", "preferred")}
    if any(wanted.values()):
        data["topology"] = {kind: level for kind, level in wanted.items() if level}


@login_required
def jupyter_new(request: HttpRequest) -> HttpResponse:
    """Launch Jupyter: an interactive job with port 8888, opened through the portal."""
    projects = _submittable(request.user)
    errors, preview = {}, None
    chosen = request.GET.get("project") or _preferred_project(request.user, projects)
    values = {"gpus": "0.5", "image": JUPYTER_IMAGE, "project": chosen}
    if request.method == "POST":
        values = request.POST
        data, errors = form_input(request.POST, {"project": TEXT, "name": TEXT, "gpus": FLOAT,
                                                 "image": TEXT})  # fmt: skip
        data.setdefault("image", JUPYTER_IMAGE)
        if "name" not in data:  # a second Jupyter gets jupyter-<user>-2, not a "name taken"
            data["name"] = _free_name(data.get("project", ""),
                                      f"jupyter-{request.user.get_username()}")  # fmt: skip
        data |= {"type": JobType.INTERACTIVE, "ports": [JUPYTER_PORT]}
        if not errors:
            job, errors, preview = _submit(request, data)
            if job is not None:
                messages.success(request, f"Jupyter {job.name} is starting.")
                lab = session_path(job.project.name, job.name) + "lab"
                open_later(request, job.project.name, job.name, lab)  # the page opens it
                return redirect("job-detail", project=job.project.name, name=job.name)
    context = {"page": "jobs", "values": values, "errors": errors, "projects": projects,
               "preview": preview}  # fmt: skip
    return render(request, "web/jupyter_form.html", context)


@login_required
def job_detail(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """Status, placement, events with the scheduler's reasons, live logs, links and Stop."""
    job = access.get_job_for(request.user, project, name)
    events = list(JobEvent.objects.filter(job=job).order_by("time", "id"))
    runs = list(JobRun.objects.filter(job=job).order_by("number").defer("logs"))
    redact = access.texts_for(request.user)  # other projects' jobs unnamed (issue 32 item 7)
    for event in events:
        event.message = redact(event.message)
    for run in runs:
        run.reason, run.ended_by = redact(run.reason), redact(run.ended_by)
    job.pending_reason = redact(job.pending_reason)  # shown only, never saved
    now = timezone.now()
    chosen = next((run.number for run in runs if str(run.number) == request.GET.get("run")), None)
    jupyter = _jupyter(job)
    session_url = (origins.session_url(job) if jupyter and job.status in ACTIVE
                   and access.can_open_session(request.user, job) else None)  # fmt: skip
    sharing = _sharing(request.user, job) if jupyter else None
    starting, open_at = _session_progress(request, job) if session_url else (None, "")
    if open_at and starting is None and job.holds_gpus:
        return redirect(open_at)  # launched, and the lab answers already
    return render(
        request,
        "web/job_detail.html",
        {"page": "jobs", "job": job, "events": events,
         "urls": job_urls(job) if job.holds_gpus and job.ports else [],
         "session_url": session_url, "starting": starting, "open_at": open_at,
         "sharing": sharing,
         "extend": access.extend_action(request.user, job),
         "can_stop": access.can_change_job(request.user, job), "active_statuses": ACTIVE,
         "service": _service(job), "waiting": _waiting(job, runs[-1] if runs else None, now),
         "domain": landing(job.nodes, {}) if job.holds_gpus else "",
         "chosen_run": chosen, "logs_run": chosen or (runs[-1].number if runs else None),
         "runs": [{"run": run, "duration_s": run.duration_s(now), "gpu_hours": run.gpu_hours(now)}
                  for run in runs]},
    )  # fmt: skip


def _sharing(user, job) -> dict:
    """What the job page shows of who may open the notebook: its live grants, whom the owner
    may still share it with, and whether the viewer may share it or "Access server"."""
    live = list(grants.live(job).select_related("user", "granted_by").order_by("created_at"))
    shared = {grant.user_id for grant in live if grant.kind == SessionGrant.SHARE}
    owner = access.can_share_session(user, job)
    members = access.shareable_with(job) if owner else []
    candidates = [m.user.username for m in members if m.user_id not in shared]
    can_access = (access.can_access_server(user, job) and job.status in ACTIVE
                  and not access.can_open_session(user, job))  # fmt: skip
    return {"grants": live, "owner": owner, "candidates": candidates,
            "everyone": None in shared, "can_access": can_access}  # fmt: skip


def _jupyter(job) -> bool:
    """True for a notebook: an interactive job serving Jupyter's port."""
    return job.type == JobType.INTERACTIVE and JUPYTER_PORT in (job.ports or [])


def _session_progress(request: HttpRequest, job) -> tuple[dict | None, str]:
    """(the steps of a Jupyter session on its way, or None when its lab answers or the job is
    over; where to go once it answers, when the user launched it or opened the lab early)."""
    open_at = take_open(request, job.project.name, job.name)
    if open_at:  # on the sessions' origin when there is one
        root = session_path(job.project.name, job.name)
        open_at = origins.session_url(job, open_at.removeprefix(root))
    if job.status not in ACTIVE:
        return None, ""
    sessions = get_agent().sessions
    session = sessions.get(job.project.name, job.name) if sessions is not None else None
    progress = session_steps.progress(job, session)
    return (None if progress["answering"] else progress), open_at


def _waiting(job, last, now) -> str:
    """For a pending job whose last run was evicted: "preempted 3 minutes ago by team-a's
    reclaim, run 2 waits since 12:04"; else ""."""
    if job.status != Status.PENDING or last is None or last.end != RunEnd.EVICTED:
        return ""
    since = timezone.localtime(job.waiting_since)
    return (f"preempted {timesince(last.ended_at, now)} ago by {last.ended_by}, "
            f"run {last.number + 1} waits since {since:%H:%M}")  # fmt: skip


def _service(job) -> dict | None:
    """GPU-hours a training job has held and its service band, when the cluster uses bands (L1)."""
    bands = settings.ALLOT_SERVICE_BANDS
    if not bands or job.type != JobType.TRAIN:
        return None
    held = job.held_gpu_s
    if job.holds_gpus and job.started_at is not None:
        held += job.allocated_gpus * max(0.0, (timezone.now() - job.started_at).total_seconds())
    return {"held_h": held / 3600, "band": band_for(held, bands), "bands": len(bands) + 1}


@login_required
@require_POST
def job_extend(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """Extend a running job's deadlines once (the project must allow it)."""
    job = access.get_job_for(request.user, project, name)
    if not access.can_change_job(request.user, job):
        raise PermissionDenied
    try:
        services.extend_job(job, request.user)
        messages.success(request, f"Job {project}/{name} extended.")
    except APIException as exc:
        _refused(request, exc)
    return redirect("job-detail", project=project, name=name)


def _changeable(request: HttpRequest, project: str, name: str):
    """The job if the user may see it (else 404) and change it (else 403): its owner and the
    project's admins (`access.can_change_job`)."""
    job = access.get_job_for(request.user, project, name)
    if not access.can_change_job(request.user, job):
        raise PermissionDenied
    return job


def _refused(request: HttpRequest, exc: APIException) -> None:
    messages.error(request, " ".join(r for rs in field_errors(exc).values() for r in rs))


@login_required
@require_POST
def job_stop(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """Stop a job: its run ends and its GPUs are free at once; it stays, Stopped, resumable."""
    job = _changeable(request, project, name)
    try:
        lifecycle.stop(job, request.user)
        messages.success(request, f"Job {project}/{name} stopped; resume it to run it again.")
    except APIException as exc:
        _refused(request, exc)
    return redirect("job-detail", project=project, name=name)


@login_required
def from_the_lab(request: HttpRequest, project: str, name: str, page: str) -> HttpResponse:
    """JupyterLab's way back to the portal (`agents.sessions.way_back`): its File > Hub Control
    Panel (`home`) and its offer to restart a server that is gone (`spawn`) open the job's page,
    where Open, Resume and Stop are; a 404 to whoever may not see the job, as the job page."""
    if page not in ("home", "spawn"):
        raise Http404("JupyterLab asks the portal for its control panel or a restart only")
    job = access.get_job_for(request.user, project, name)
    return redirect("job-detail", project=job.project.name, name=job.name)


@login_required
@require_POST
def job_resume(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """Queue a Stopped job again with the same spec; a notebook's page then opens its lab as soon
    as it answers, as after a launch (issue 34 item 4)."""
    job = _changeable(request, project, name)
    try:
        services.resume_job(job, request.user)
        messages.success(request, f"Job {project}/{name} queued again.")
        if _jupyter(job) and access.can_open_session(request.user, job):
            open_later(request, project, name, session_path(project, name) + "lab")
    except APIException as exc:
        _refused(request, exc)
    return redirect("job-detail", project=project, name=name)


@login_required
@require_POST
def job_delete(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """Delete the job whatever its status (the page's button asks for confirmation first); its
    name is free again."""
    job = _changeable(request, project, name)
    services.delete_job(job, request.user)
    messages.success(request, f"Job {project}/{name} deleted.")
    return redirect("jobs")


# --- Sharing a notebook, and an admin's access to one (issue 32 item 3) ----------------------


@login_required
@require_POST
def session_share(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """The owner shares the notebook with a teammate (`username`) or the whole project
    (`username` = "*")."""
    job = access.get_job_for(request.user, project, name)
    if not access.can_share_session(request.user, job):
        raise PermissionDenied("Only the notebook's owner shares it.")
    wanted = request.POST.get("username", "").strip()
    if wanted == "*":
        grants.share(job, request.user)
        messages.success(request, f"Shared with everyone who may run code in {project}.")
    else:
        member = access.shareable_with(job).filter(user__username=wanted).first()
        if member is None:
            refusal = f"{wanted or 'Nobody'} is not a researcher or admin of {project}"
            messages.error(request, f"{refusal}: a notebook is shared with those only.")
        else:
            grants.share(job, request.user, member.user)
            messages.success(request, f"Shared with {wanted}.")
    return redirect("job-detail", project=project, name=name)


@login_required
@require_POST
def session_unshare(request: HttpRequest, project: str, name: str, grant: int) -> HttpResponse:
    """The owner ends a share (its open sockets close within seconds)."""
    job = access.get_job_for(request.user, project, name)
    if not access.can_share_session(request.user, job):
        raise PermissionDenied("Only the notebook's owner ends its shares.")
    found = grants.live(job).filter(pk=grant, kind=SessionGrant.SHARE).first()
    if found is None:
        raise Http404("No such share.")
    grants.revoke(found, request.user)
    messages.success(request, "Share ended.")
    return redirect("job-detail", project=project, name=name)


@login_required
@require_POST
def session_access(request: HttpRequest, project: str, name: str) -> HttpResponse:
    """An admin opens another's notebook: with a reason, audited, shown to its owner."""
    job = access.get_job_for(request.user, project, name)
    if not access.can_access_server(request.user, job):
        raise PermissionDenied("Only cluster and project admins access another's notebook.")
    reason = request.POST.get("reason", "").strip()
    if not reason:
        messages.error(request, "Say why you open this notebook: its owner will see it.")
        return redirect("job-detail", project=project, name=name)
    grants.admin_access(job, request.user, reason[:500])
    return redirect(origins.session_url(job, "lab"))
