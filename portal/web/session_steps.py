"""How far a Jupyter session is on its way to a usable lab: the steps the job's page shows while
it starts, and the small JSON answer its script asks for every 150 ms (issue 24 item 1).

Queued for a GPU -> GPU allocated -> Jupyter server starting -> JupyterLab answers. The answer
is always a 200 with the steps (never the proxy's 503), so the waiting page logs nothing in the
browser's console. The lab "answers" when its `/api/status` does, asked with the server's token
from here; when it does and the job still says ContainerCreating, a scheduling cycle is asked
for at once, so the job says Running when the lab answers, not at the cycle's next tick.

After "Launch Jupyter" (or a visit to the lab while it is not up yet) the job's page opens the
lab by itself as soon as it answers: the place to go is kept in the user's session
(`portal.web.sessions.open_later`) and handed to the page once, so a later visit to the job's
page stays there.
"""

from __future__ import annotations

import urllib.request

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, JsonResponse

from agents.sessions import Session
from portal.core import trigger
from portal.jobs.models import ENDED, Status
from portal.web import session_origin as origins
from portal.web.sessions import find_session

STEPS = (
    ("queued", "Queued for a GPU"),
    ("placed", "GPU allocated"),
    ("server", "Jupyter server starting"),
    ("lab", "JupyterLab answers"),
)
ASK_TIMEOUT_S = 1.0


def answers(session: Session | None) -> bool:
    """True when the session's server answers its status API (the lab will load)."""
    if session is None:
        return False
    token = {"Authorization": f"token {session.token}"}
    request = urllib.request.Request(f"{session.upstream}api/status", headers=token)
    try:
        with urllib.request.urlopen(request, timeout=ASK_TIMEOUT_S) as response:
            return response.status == 200
    except (OSError, ValueError):
        return False


def steps(job, session: Session | None, answering: bool) -> list[dict]:
    """The four steps, each done, active or still to come, with a detail for the active one."""
    if answering:
        reached = 4
    elif job.status == Status.PENDING:
        reached = 0
    else:
        reached = 2 if job.holds_gpus else 1
    details = {
        "queued": job.pending_reason or "waiting for the next scheduling cycle",
        "placed": _placement(job),
        "server": "the process runs; waiting for it to answer" if session else "starting it",
        "lab": "opening JupyterLab",
    }
    return [
        {"key": key, "label": label, "detail": details[key] if index <= reached else "",
         "state": "done" if index < reached else "active" if index == reached else "todo"}
        for index, (key, label) in enumerate(STEPS)
    ]  # fmt: skip


def _placement(job) -> str:
    pods = [f"{pod['node']} GPU {','.join(map(str, pod.get('devices', ()))) or '-'}"
            + (f" ({pod['share']:g})" if pod.get("share", 1) < 1 else "")
            for pod in job.placement or ()]  # fmt: skip
    return "; ".join(pods) or "placing"


def ended(job) -> str:
    """Why the job will not open a lab (it ended or was stopped); "" while it may."""
    if job.status not in ENDED:
        return ""
    last = job.events.order_by("-time", "-id").first()
    reason = f": {last.message}" if last is not None and last.message else ""
    return f"The job is {job.status}{reason}"


def progress(job, session: Session | None) -> dict:
    """What the page shows: the job's status, the steps, whether the lab answers, why it ended.
    A lab that answers while the job still says ContainerCreating asks for a cycle now."""
    answering = job.holds_gpus and answers(session)
    if answering and job.status == Status.CONTAINER_CREATING:
        trigger.request_cycle()
    return {
        "status": job.status,
        "answering": answering,
        "lab": origins.session_url(job, "lab"),
        "steps": steps(job, session, answering),
        "ended": ended(job),
    }


@login_required
def session_progress(request: HttpRequest, project: str, name: str) -> JsonResponse:
    """GET: the job's session progress (404 for a job the user may not see, 403 for a viewer)."""
    job, session = find_session(request.user, project, name)
    response = JsonResponse(progress(job, session))
    response["Cache-Control"] = "no-store"
    return response
