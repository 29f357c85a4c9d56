"""Pages for a project's per-user limits (issue 36, docs/user-fairness.md): the table on the
project page (every limit its reader may see, and what is in force for them) and its admins'
form that sets the default or a member's override, or removes one.

As for budgets, what is valid is decided by the API's serializer and the write is the tenancy
service's, so a field's message reads the same here and in the JSON.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from portal import access
from portal.api.serializers.userlimits import UserLimitSerializer
from portal.tenancy import services
from portal.tenancy.models import Project, UserLimit
from portal.tenancy.userlimits import in_force
from portal.web.forms import CHOICE, NUMBER, field_errors, form_input

LIMIT_FIELDS = dict.fromkeys(UserLimit.FIELDS, NUMBER)  # empty: none (as the default says)


def for_project(user, project: Project) -> dict:
    """What the project page shows of its per-user limits to `user`."""
    member = access.role_in(user, project) is not None
    return {
        "user_limits": access.user_limits_for(user, project),
        "my_limits": describe(in_force(project, user)) if member else None,
        "can_manage_limits": access.can_manage_user_limits(user, project),
    }


WORDS = {
    "max_gpus": "{} GPUs held",
    "max_running": "{} running jobs",
    "max_pending": "{} pending jobs",
    "max_interactive": "{} interactive sessions",
}


def describe(limits: dict) -> str:
    """'2 GPUs held, 1 pending job' of the limits in force; 'none' without any."""
    words = []
    for field, value in limits.items():
        if value is None:
            continue
        text = WORDS[field].format(_plain(value))
        if value <= 1:  # 1 GPU, 0.5 GPU (as the core's reasons), 1 running job
            text = text.replace("GPUs", "GPU").replace("jobs", "job").replace("ions", "ion")
        words.append(text)
    return ", ".join(words) or "none"


def _gate(request: HttpRequest, name: str, pk: int | None) -> tuple[Project, UserLimit | None]:
    """The project (404 unless visible), once the user may manage its limits (403), and the
    limit `pk` of it (404 when there is none)."""
    project = access.get_project_for(request.user, name)
    if not access.can_manage_user_limits(request.user, project):
        raise PermissionDenied
    if pk is None:
        return project, None
    limit = UserLimit.objects.filter(project=project, pk=pk).select_related("user").first()
    if limit is None:
        raise Http404(f"No per-user limit {pk} in {project.name}.")
    return project, limit


@login_required
def user_limit_form(request: HttpRequest, name: str, pk: int | None = None) -> HttpResponse:
    """Set the project default or a member's override (new), or change one (the project's
    admins); the form again with each error under its field, status 400, nothing saved."""
    project, limit = _gate(request, name, pk)
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        values = request.POST
        saved, errors = _save(request, project, limit)
        if saved is not None:
            messages.success(request, f"Per-user limit of {_whose(saved)} saved.")
            return redirect("project-detail", name=project.name)
        status = 400
    elif limit is not None:
        values = {field: _plain(getattr(limit, field)) for field in UserLimit.FIELDS}
    taken = UserLimit.objects.filter(project=project, user__isnull=False).values("user_id")
    members = project.memberships.exclude(user_id__in=taken).select_related("user")
    return render(request, "web/user_limit_form.html", {
        "page": "projects", "project": project, "limit": limit, "values": values,
        "errors": errors, "whose": _whose(limit) if limit else "",
        "members": members.order_by("user__username").values_list("user__username", flat=True),
        "has_default": UserLimit.objects.filter(project=project, user__isnull=True).exists(),
    }, status=status)  # fmt: skip


def _save(request, project: Project, limit: UserLimit | None) -> tuple[UserLimit | None, dict]:
    """The form through the API's serializer and the service: (limit, {}) or (None, errors)."""
    kinds = LIMIT_FIELDS if limit is not None else {"user": CHOICE, **LIMIT_FIELDS}
    data, errors = form_input(request.POST, kinds)
    if errors:
        return None, errors
    serializer = UserLimitSerializer(
        limit, data=data, partial=limit is not None, context={"project": project}
    )
    if not serializer.is_valid():
        return None, field_errors(serializer.errors)
    try:
        if limit is None:
            return services.create_user_limit(project, **serializer.validated_data), {}
        return services.update_user_limit(limit, **serializer.validated_data), {}
    except APIException as exc:  # a 409 (that one is set already) reads as the API's
        return None, field_errors(exc)


@login_required
@require_POST
def user_limit_delete(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Remove a per-user limit (the project's admins): an override falls back to the default,
    the default to no limit."""
    project, limit = _gate(request, name, pk)
    services.delete_user_limit(limit)
    messages.success(request, f"Per-user limit of {_whose(limit)} removed.")
    return redirect("project-detail", name=project.name)


def _whose(limit: UserLimit) -> str:
    return limit.user.get_username() if limit.user_id else "every user (the project default)"


def _plain(value) -> str:
    """A stored limit as its form shows it: 2.50 -> '2.5', None -> ''."""
    return "" if value is None else f"{float(value):g}"
