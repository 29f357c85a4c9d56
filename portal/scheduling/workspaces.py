"""Persistent workspaces (issue 23): each user's Jupyter sessions in a project share a home that
outlives them - a folder under var/ with the simulated agent, a PersistentVolumeClaim per
(project, user) under Kubernetes - kept by the agent's `sessions` (`agents.sessions`,
`agents.kubernetes.sessions`). Relaunching Jupyter finds the files where they were; deleting a
workspace is an explicit request (the API's DELETE, the confirmation on /me/workspaces/), refused
while a session of the user's in the project holds GPUs.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework.exceptions import APIException

from agents.sessions import JUPYTER_PORT, WorkspaceBusy
from portal import access
from portal.core.errors import conflict
from portal.jobs.models import HOLDING, Job, JobType
from portal.scheduling.agent import get_agent


class WorkspacesUnavailable(APIException):
    """503: the cluster that keeps the workspaces cannot be asked now (its API server is down)."""

    status_code = 503
    default_detail = "The cluster's workspaces cannot be reached now; try again in a minute."
    default_code = "unavailable"


def workspace_projects(username: str) -> list[str]:
    """The projects in which `username` has a workspace (none when sessions are off)."""
    sessions = get_agent().sessions
    if sessions is None:
        return []
    try:
        return sessions.workspace_projects(username)
    except Exception as exc:  # a cluster's API server that fails or cannot be reached
        raise WorkspacesUnavailable(f"{WorkspacesUnavailable.default_detail} ({exc})") from exc


def running_sessions(project: str, username: str) -> list[str]:
    """The names of `username`'s Jupyter jobs in `project` that hold GPUs (use the workspace)."""
    jobs = Job.objects.filter(project__name=project, user__username=username,
                              status__in=HOLDING, type=JobType.INTERACTIVE)  # fmt: skip
    return [name for name, ports in jobs.values_list("name", "ports") if JUPYTER_PORT in ports]


def delete_workspace(actor, project: str, username: str) -> None:
    """Delete `username`'s workspace in `project` and every file in it, for `actor` (that user or
    a cluster admin, `access.can_delete_workspace`; to anyone else it is a 404, as is a workspace
    that does not exist). 409 while a session of theirs there holds GPUs: stop it first."""
    if not access.can_delete_workspace(actor, username):
        raise Http404("no such workspace")
    if project not in workspace_projects(username):
        raise Http404(f"{username} has no workspace in {project}")
    running = running_sessions(project, username)
    if running:
        raise conflict("workspace", f"Jupyter job {', '.join(running)} uses it: stop it first")
    try:
        get_agent().sessions.delete_workspace(project, username)
    except WorkspaceBusy as exc:
        raise conflict("workspace", str(exc)) from None
    except OSError as exc:  # a file the portal could not remove
        raise conflict("workspace", f"could not delete it: {exc}") from exc
    except Exception as exc:  # a cluster's API server that fails or cannot be reached
        raise WorkspacesUnavailable(f"{WorkspacesUnavailable.default_detail} ({exc})") from exc
