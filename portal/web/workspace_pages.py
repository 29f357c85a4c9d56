"""Your persistent workspaces' page (/me/workspaces/, issue 23): one per project in which you
launched Jupyter, the home your notebooks find again on every launch there. Deleting one takes
its files with it, so the page asks for the project's name to be typed first; a workspace a
running Jupyter job uses is not deleted (stop the job first). The REST API's DELETE
/api/v1/workspaces/{project}/{user}/ does the same (`portal.scheduling.workspaces`)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from portal.core.errors import Conflict
from portal.scheduling import workspaces


@login_required
@require_http_methods(["GET", "POST"])
def my_workspaces(request: HttpRequest) -> HttpResponse:
    """The list, each with its running Jupyter jobs and a delete form that must be confirmed by
    typing the project's name; a POST deletes one (400 with the reason when unconfirmed)."""
    try:
        return _page(request)
    except workspaces.WorkspacesUnavailable as exc:
        context = {"page": "me", "workspaces": [], "error": str(exc.detail)}
        return render(request, "web/workspaces.html", context, status=503)


def _page(request: HttpRequest) -> HttpResponse:
    username = request.user.get_username()
    errors, status = {}, 200
    if request.method == "POST":
        project = request.POST.get("project", "")
        if request.POST.get("confirm", "").strip() != project or not project:
            errors[project] = f"Type {project} to confirm: its files cannot be restored."
            status = 400
        else:
            try:
                workspaces.delete_workspace(request.user, project, username)
            except Http404:
                errors[project], status = f"You have no workspace in {project}.", 404
            except Conflict as exc:
                errors[project], status = " ".join(exc.detail.get("workspace", [])), 409
            else:
                messages.success(request, f"Your workspace in {project} was deleted.")
                return redirect("my-workspaces")
    projects = workspaces.workspace_projects(username)
    rows = [{"project": project, "running": workspaces.running_sessions(project, username),
             "error": errors.get(project, "")} for project in projects]  # fmt: skip
    stray = [error for project, error in errors.items() if project not in projects]
    context = {"page": "me", "workspaces": rows, "error": " ".join(stray)}
    return render(request, "web/workspaces.html", context, status=status)
