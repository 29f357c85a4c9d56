"""A cluster admin's actions on one account from the Users page: deactivate or activate it, make
it a cluster admin or not, delete it, give it a role in a project (issue 34 item 9). Who may is
asked of `portal.access`; what is refused (one's own account, the last admin) is decided by
`portal.tenancy.services`, whose reason is shown."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from portal import access
from portal.tenancy import services
from portal.tenancy.models import Project, Role
from portal.web.forms import field_errors

# the Users page's buttons: (flags to set, what the message says was done)
ACTIONS = {
    "deactivate": ({"is_active": False}, "deactivated: they can no longer sign in or use tokens"),
    "activate": ({"is_active": True}, "activated"),
    "make-admin": ({"is_staff": True}, "is now a cluster admin"),
    "remove-admin": ({"is_staff": False}, "is no longer a cluster admin"),
}


@login_required
@require_POST
def user_update(request: HttpRequest, username: str) -> HttpResponse:
    """One of ACTIONS, or "delete", on `username` (cluster admins)."""
    if not access.can_manage_users(request.user):
        raise PermissionDenied("Only cluster admins change accounts.")
    person = get_user_model().objects.filter(username=username).first()
    if person is None:
        raise Http404(f"User {username} not found.")
    action = request.POST.get("action", "")
    try:
        if action == "delete":
            services.delete_user(person, by=request.user)
            messages.success(request, f"User {username} deleted; their jobs stay.")
        elif action in ACTIONS:
            flags, done = ACTIONS[action]
            services.update_user(person, by=request.user, **flags)
            messages.success(request, f"{username} {done}.")
        else:
            messages.error(request, f"unknown action {action[:40]!r}")
    except APIException as exc:
        messages.error(request, " ".join(r for rs in field_errors(exc).values() for r in rs))
    return redirect("users")


@login_required
@require_POST
def user_role(request: HttpRequest, username: str) -> HttpResponse:
    """Give `username` a role in a project from the Users page (who may: as on the project's
    page, `portal.access.can_manage_members`; what is refused: the API's reason, shown)."""
    person = get_user_model().objects.filter(username=username).first()
    if person is None:
        raise Http404(f"User {username} not found.")
    name = request.POST.get("project", "")
    project = Project.objects.filter(name=name).first()
    if project is None:
        messages.error(request, f"project: no project named {name[:40]!r}")
        return redirect("users")
    if not access.can_manage_members(request.user, project):
        raise PermissionDenied("Only the project's admins and cluster admins give roles in it.")
    role = request.POST.get("role", "")
    if role not in Role.values:
        messages.error(request, f"role: {role[:40]!r} is not one of {', '.join(Role.values)}")
        return redirect("users")
    try:
        services.add_member(project, person, role)
        messages.success(request, f"{username} is now {role} in {name}.")
    except APIException as exc:
        messages.error(request, " ".join(r for rs in field_errors(exc).values() for r in rs))
    return redirect("users")
