"""Per-user limits inside a project as the rest of the portal reads them (issue 36,
docs/user-fairness.md): the limits in force for one user (a submission's pending cap, the pages)
and every project's limits as the scheduling core takes them (R21.1-R21.3)."""

from __future__ import annotations

from collections.abc import Collection

from django.db.models import Q

from portal.tenancy.models import Project, UserLimit
from scheduler import UserLimit as CoreLimit

CORE_FIELDS = ("max_gpus", "max_running", "max_interactive")  # what the core enforces


def in_force(project: Project, user) -> dict:
    """{field: value or None} of `user`'s limits in `project`: their override field by field over
    the project default (None: no limit), as `scheduler.userlimits.effective_limit` overlays
    them; an anonymous submitter (`user` None) gets the default."""
    return in_force_in([project], user)[project.pk]


def in_force_in(projects: Collection[Project], user) -> dict[int, dict]:
    """`in_force` for each of `projects`, by project id, in one query (a bulk submission's)."""
    who = Q(user__isnull=True)
    if user is not None and user.pk is not None:
        who |= Q(user=user)
    found: dict[int, dict] = {project.pk: dict.fromkeys(UserLimit.FIELDS) for project in projects}
    rows = UserLimit.objects.filter(who, project_id__in=list(found))
    for row in sorted(rows, key=lambda row: row.user_id is not None):  # the default first
        for field in UserLimit.FIELDS:
            if getattr(row, field) is not None:
                found[row.project_id][field] = getattr(row, field)
    return found


def for_core(names: Collection[str] | None = None) -> dict[int, tuple[CoreLimit, ...]]:
    """Every project's limits (or those of the projects named in `names`) as
    `scheduler.model.UserLimit` entries, by project id, in one query: the default as user ""
    and each override by username. A row that sets none of the core's fields (only
    `max_pending`) is left out, so a project with pending caps only costs the cycle nothing
    (the core never counts its jobs per user)."""
    rows = UserLimit.objects.order_by("project_id", "id")
    if names is not None:  # a submission's check reads its own project's, not the cluster's
        rows = rows.filter(project__name__in=names)
    rows = rows.values_list("project_id", "user__username", *CORE_FIELDS)
    limits: dict[int, list[CoreLimit]] = {}
    for project_id, username, gpus, running, interactive in rows:
        if gpus is None and running is None and interactive is None:
            continue
        entry = CoreLimit(
            user=username or "",
            max_gpus=None if gpus is None else float(gpus),
            max_running=running,
            max_interactive=interactive,
        )
        limits.setdefault(project_id, []).append(entry)
    return {project_id: tuple(entries) for project_id, entries in limits.items()}
