"""Every permission of the portal, in one place.

Tenant data is reached only through these helpers. A project or job the user may not see is a
404 (never a 403), so that names of other teams' work do not leak. Cluster admins (`is_staff`)
see and change everything; project members see their projects; each role adds rights:
viewer reads, researcher also submits and deletes jobs, admin also manages members.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.db.models import Q, QuerySet
from django.http import Http404

from portal.jobs import grants
from portal.jobs.health import POLICY_FIELDS
from portal.jobs.models import Job, JobRun, SessionGrant
from portal.jobs.redaction import redactor, redactor_when_needed
from portal.jobs.services import project_health
from portal.tenancy.models import ApiToken, Membership, Project, Role, UserLimit

SUBMIT_ROLES = (Role.ADMIN, Role.RESEARCHER)
MANAGE_ROLES = (Role.ADMIN,)


def is_cluster_admin(user) -> bool:
    """Cluster admins edit nodes, projects and users, and run cycles."""
    return bool(user and user.is_authenticated and user.is_staff)


def may_set_clock(user) -> bool:
    """Cluster admins read and set the replay clock of a scratch portal (`portal.core.clock`):
    it moves the time every project's budgets, runs and reservations are counted by."""
    return is_cluster_admin(user)


def may_preview_changes(user) -> bool:
    """The what-if (issue 37) shows every project's queue and the jobs a change would stop:
    cluster admins only, as they alone make those changes."""
    return is_cluster_admin(user)


def projects_for(user) -> QuerySet[Project]:
    """The projects `user` may see: all for a cluster admin, else those they are a member of."""
    if is_cluster_admin(user):
        return Project.objects.all()
    if not (user and user.is_authenticated):
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user)


def jobs_for(user) -> QuerySet[Job]:
    """The jobs `user` may see: those of the projects they may see."""
    if is_cluster_admin(user):
        return Job.objects.select_related("project", "user")
    return Job.objects.select_related("project", "user").filter(
        project__in=projects_for(user).values("id")
    )


def runs_for(user) -> QuerySet[JobRun]:
    """The runs `user` may see, for GPU-hour accounting: all for a cluster admin, else those of
    their projects' jobs (a team sees its own consumption, every member of it)."""
    if is_cluster_admin(user):
        return JobRun.objects.all()
    return JobRun.objects.filter(project__in=projects_for(user).values("id"))


def budget_filter(user) -> Q:
    """Which budgets `user` may read (issue 36), as a filter on `portal.budgets.models.Budget`:
    every one for a cluster admin; else their projects' budgets (a user's budget: their own, or
    any in a project they are an admin of) and their projects' departments'. Only cluster admins
    create, change or delete budgets (`is_cluster_admin`)."""
    if is_cluster_admin(user):
        return Q()
    if not (user and user.is_authenticated):
        return Q(pk__in=[])
    mine = projects_for(user).values("id")
    led = Membership.objects.filter(user=user, role=Role.ADMIN).values("project_id")
    return (
        Q(project__in=mine, user__isnull=True)
        | Q(project__in=mine, user=user)
        | Q(project__in=led)
        | Q(department__projects__in=mine)
    )


def texts_for(user) -> Callable[[str], str]:
    """What a scheduler's text says to `user`: other projects' jobs named as "another
    project's job" unless they are a cluster admin (issue 32 item 7, `portal.jobs.redaction`)."""
    if is_cluster_admin(user):
        return redactor(None, ())
    return redactor_when_needed(lambda: (
        set(projects_for(user).values_list("name", flat=True)),
        Project.objects.values_list("name", flat=True),
    ))  # fmt: skip


def get_project_for(user, name: str) -> Project:
    """The project `name` if `user` may see it; otherwise 404 (same answer as a missing one)."""
    project = projects_for(user).filter(name=name).first()
    if project is None:
        raise Http404(f"Project {name!r} not found.")
    return project


def get_job_for(user, project: str, name: str) -> Job:
    """The job `project/name` if `user` may see it; otherwise 404."""
    job = jobs_for(user).filter(project__name=project, name=name).first()
    if job is None:
        raise Http404(f"Job {project}/{name} not found.")
    return job


def role_in(user, project: Project) -> str | None:
    """The user's role in `project`, or None when they are not a member."""
    return roles_in(user, [project]).get(project.pk)


def roles_in(user, projects: Iterable[Project]) -> dict[int, str]:
    """The user's role in each of `projects` they are a member of, by project id (one query)."""
    if not (user and user.is_authenticated):
        return {}
    return dict(
        Membership.objects.filter(user=user, project__in=list(projects)).values_list(
            "project_id", "role"
        )
    )


def can_submit(user, project: Project) -> bool:
    """Cluster admins and the project's admins and researchers submit and delete jobs."""
    return bool(submitting_in(user, [project]))


def submitting_in(user, projects: Iterable[Project]) -> list[Project]:
    """Of `projects`, in their order, those `user` may submit jobs in (`can_submit`): every one
    for a cluster admin, with no query; else one query for the user's roles in them all."""
    projects = list(projects)
    if is_cluster_admin(user) or not projects:
        return projects
    roles = roles_in(user, projects)
    return [project for project in projects if roles.get(project.pk) in SUBMIT_ROLES]


def submittable(user, names: set[str]) -> dict[str, Project]:
    """Of the projects named `names`, those `user` may see and submit jobs in, by name, in one
    or two queries (a bulk submission's projects)."""
    visible = projects_for(user).filter(name__in=names)
    return {project.name: project for project in submitting_in(user, visible)}


def can_manage_members(user, project: Project) -> bool:
    """Cluster admins and the project's admins add and remove members."""
    return is_cluster_admin(user) or role_in(user, project) in MANAGE_ROLES


def user_limits_for(user, project: Project) -> QuerySet[UserLimit]:
    """The per-user limits of `project` that `user` may read (issue 36): every one for its
    admins and cluster admins; for its other members the project default and their own
    override (a teammate's override is a 404, as another's budget). The project itself is
    reached through `get_project_for` first, so an outsider has a 404 before this."""
    limits = UserLimit.objects.filter(project=project).select_related("user")
    if can_manage_user_limits(user, project):
        return limits
    return limits.filter(Q(user__isnull=True) | Q(user_id=user.pk))


def can_manage_user_limits(user, project: Project) -> bool:
    """Cluster admins and the project's admins set, change and remove its per-user limits (the
    people inside a project are its admins' to arbitrate; the quota stays the cluster's)."""
    return is_cluster_admin(user) or role_in(user, project) in MANAGE_ROLES


PROJECT_ADMIN_FIELDS = frozenset(POLICY_FIELDS)  # time limits and job health, not quota


def editable_project_fields(user, project: Project) -> frozenset[str] | None:
    """What `user` may change in `project`: None means every field (cluster admins); a project
    admin changes its time limits and health policies, not its quota; others nothing."""
    if is_cluster_admin(user):
        return None
    if role_in(user, project) in MANAGE_ROLES:
        return PROJECT_ADMIN_FIELDS
    return frozenset()


def can_manage_users(user) -> bool:
    """Cluster admins create users and set their passwords."""
    return is_cluster_admin(user)


def tokens_for(user, owner=None) -> QuerySet[ApiToken]:
    """The live (unrevoked) API tokens of `owner` that `user` may list and revoke: their own,
    anyone's for a cluster admin (`owner` given), else none - another's token is a 404."""
    if not (user and user.is_authenticated):
        return ApiToken.objects.none()
    if owner is not None and owner.pk != user.pk and not can_manage_users(user):
        return ApiToken.objects.none()
    return ApiToken.objects.filter(user=owner or user, revoked_at__isnull=True)


def can_manage_sso_rules(user) -> bool:
    """Cluster admins edit the single sign-on rules that map provider groups to project roles."""
    return is_cluster_admin(user)


# --- What the pages offer: an action shows only to those who may use it (issue 24 item 5) ----


def submittable_projects(user) -> list[Project]:
    """The projects where `user` may submit jobs and launch Jupyter, by name."""
    return submitting_in(user, projects_for(user).order_by("name"))


def why_not_submit(user) -> str | None:
    """None when `user` may submit in some project; else why not, in words for the page."""
    if submittable_projects(user):
        return None
    roles = Membership.objects.filter(user=user).select_related("project").order_by("project")
    if not roles:
        return "You are not a member of any project yet: ask a cluster admin to add you."
    held = ", ".join(f"{m.role} in {m.project.name}" for m in roles)
    return f"Only researchers and admins submit jobs; you are {held}."


def can_open_session(user, job: Job) -> bool:
    """A notebook is its owner's alone (issue 32 item 3, as JupyterHub's servers): its owner
    opens it, and so does whom it is shared with (a teammate or the whole project) or an admin
    during an audited "Access server" (`portal.jobs.grants`) - each only while they may run code
    in the project (viewers never). One query past the role's."""
    if not (user and user.is_authenticated and user.is_active):
        return False
    if not can_submit(user, job.project):
        return False
    if job.user_id == user.pk:
        return True
    mine = Q(user=user) | Q(user__isnull=True, kind=SessionGrant.SHARE)
    return grants.live(job).filter(mine).exists()


def can_change_job(user, job: Job) -> bool:
    """Stop, resume, delete, extend and the shell of a job: its owner (while a researcher or
    admin of the project), the project's admins and cluster admins - not every researcher of
    the project (issue 32 item 3)."""
    if is_cluster_admin(user):
        return True
    role = role_in(user, job.project)
    return role in MANAGE_ROLES or (role in SUBMIT_ROLES and job.user_id == user.pk)


def can_share_session(user, job: Job) -> bool:
    """Only a notebook's owner shares it (and ends its shares)."""
    return (
        bool(user and user.is_authenticated)
        and job.user_id == user.pk
        and can_submit(user, job.project)
    )


def can_access_server(user, job: Job) -> bool:
    """Cluster admins and the project's admins may open another's notebook through an audited
    "Access server" (its owner opens it plainly)."""
    if not (user and user.is_authenticated) or job.user_id == user.pk:
        return False
    return is_cluster_admin(user) or role_in(user, job.project) in MANAGE_ROLES


def shareable_with(job: Job) -> QuerySet:
    """The project's members a notebook may be shared with: its researchers and admins, not
    its owner (viewers run no code)."""
    return (
        Membership.objects.filter(project=job.project, role__in=SUBMIT_ROLES)
        .exclude(user_id=job.user_id)
        .select_related("user")
        .order_by("user__username")
    )


HIDDEN = "(hidden)"


def environment_for(user, job: Job) -> dict:
    """A job's environment as `user` may read it (issue 32 item 8): its owner reads every value;
    the project's researchers and admins (and cluster admins) every value but those marked
    secret (`secret_environment`); viewers the names only."""
    env = job.environment or {}
    if user is not None and user.is_authenticated and job.user_id == user.pk:
        return dict(env)
    if not can_submit(user, job.project):
        return dict.fromkeys(env, HIDDEN)
    secret = set(job.secret_environment or ())
    return {name: HIDDEN if name in secret else value for name, value in env.items()}


def can_delete_workspace(user, owner: str) -> bool:
    """A user's persistent workspace in a project (their notebooks' files, issue 23) is deleted
    by that user or by a cluster admin; to anyone else it does not exist."""
    return user.get_username() == owner or is_cluster_admin(user)


def extend_action(user, job: Job) -> tuple[bool, str] | None:
    """How "Extend once" shows on a running job: None (not at all: the user may not extend, or
    the project allows no extension), (True, what it does), or (False, why it is disabled)."""
    if not job.holds_gpus or not can_change_job(user, job):
        return None
    extension = project_health(job.project).timeout_extension_s
    if not extension:
        return None
    if job.extended_s:
        return False, f"Extended once already (by {job.extended_s} s); a job is extended only once."
    return True, f"Moves its time limits and idle timeout {extension} s later, once."


def why_not_change_account(user, person) -> str | None:
    """None when `user` may deactivate, delete or promote `person`'s account; else why not."""
    if not can_manage_users(user):
        return "Only cluster admins change accounts."
    if person.pk == user.pk:
        return "Your own account: another cluster admin changes it, so nobody locks themselves out."
    return None


# ------------------------------------------------------------------ reservations (issue 37, R22)
BOOKING_MAX_HOURS = 24
BOOKING_MAX_DAYS_AHEAD = 14


def reservation_filter(user) -> Q:
    """Which reservations `user` may read, as a filter on
    `portal.reservations.models.Reservation`: every one for a cluster admin, else their
    projects' (another team's booking is as private as its jobs)."""
    if is_cluster_admin(user):
        return Q()
    if not (user and user.is_authenticated):
        return Q(pk__in=[])
    return Q(project__in=projects_for(user).values("id"))


def booking_refusal(user, project: Project, gpus: int, start, end, weekly: bool, now):
    """Why `user` may not book this for `project`, as (field, reason), or None (R22.1).

    Cluster admins book anything. A project's admins book for that project within a policy:
    no more GPUs than its quota (the booking fixes *when* the project gets what it is already
    owed), slots of at most `BOOKING_MAX_HOURS` hours starting within
    `BOOKING_MAX_DAYS_AHEAD` days, and never weekly (a standing slot is the cluster's call).
    Anyone else may not book."""
    if is_cluster_admin(user):
        return None
    if role_in(user, project) not in MANAGE_ROLES:
        return ("project", f"only cluster admins and admins of {project.name} may book for it")
    if gpus > project.quota:
        return ("gpus", f"a project admin may book at most {project.name}'s quota of "
                        f"{float(project.quota):g} GPUs; ask a cluster admin for more")  # fmt: skip
    if weekly:
        return ("weekly", "only cluster admins may book a weekly slot")
    if (end - start).total_seconds() > BOOKING_MAX_HOURS * 3600:
        return ("end", f"a project admin may book at most {BOOKING_MAX_HOURS} hours at a time")
    if (start - now).total_seconds() > BOOKING_MAX_DAYS_AHEAD * 86400:
        return ("start", f"a project admin may book at most {BOOKING_MAX_DAYS_AHEAD} days ahead")
    return None


def may_change_booking(user, project: Project) -> bool:
    """Cluster admins and the project's admins change or cancel its bookings (a change is then
    checked against `booking_refusal` like a new booking)."""
    return is_cluster_admin(user) or role_in(user, project) in MANAGE_ROLES


def bookable_projects(user) -> QuerySet[Project]:
    """The projects `user` may book for (`may_change_booking`): every one for a cluster admin,
    else those they are an admin of; the booking form offers these and nothing else."""
    if is_cluster_admin(user):
        return Project.objects.all()
    if not (user and user.is_authenticated):
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user, memberships__role__in=MANAGE_ROLES)


def booking_label(user) -> Callable:
    """How a refusal names another booking to `user`: its name if they may see it, else
    "another project's booking" (names of other teams' work do not leak)."""
    if is_cluster_admin(user):
        return lambda booking: booking.name
    mine = set(projects_for(user).values_list("id", flat=True))
    return lambda booking: (
        booking.name if booking.project_id in mine else "another project's booking"
    )
