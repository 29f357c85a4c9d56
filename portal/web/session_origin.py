"""Who may use a notebook on its own origin, and how a browser signs in there (issue 32).

A notebook is served on `ALLOT_SESSIONS_ORIGIN` (portal/core/origins.py), where the portal's
cookies are never sent. A browser signs in to one session at a time, as JupyterHub's OAuth
hand-off does, without the portal's session cookie ever leaving the portal:

1. the browser opens `<session origin>/sessions/<project>/<job>/lab` with no credential there:
   it gets a random state in a cookie of the session's path and goes to the portal's
   `/sessions/<project>/<job>/_allot/open?state=…&next=…`;
2. the portal, signed in as ever, checks that the user may open the session
   (`portal.access.can_open_session`) and sends the browser back to
   `<session origin>/…/_allot/handoff?ticket=…`, a signed ticket for that user, that job and
   that state, good for one use within a minute;
3. the session's origin takes the ticket only with the same state (so nobody can push their own
   ticket into another's browser), sets its credential - a signed cookie for that session's
   path alone, HttpOnly - and sends the browser on to where it was going.

Every request and every open socket on the session's origin then checks the credential again:
the user still active, their password unchanged since, not signed out of the portal since, and
still allowed to open the session (the owner, or shared with them, or an admin's audited
access). The credential is never the portal's: a notebook's scripts cannot act on the portal.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from urllib.parse import urlencode, urlsplit

from asgiref.sync import iscoroutinefunction
from channels.security.websocket import AllowedHostsOriginValidator, WebsocketDenier
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_out
from django.core import signing
from django.core.cache import cache
from django.core.exceptions import PermissionDenied
from django.dispatch import receiver
from django.http import Http404, HttpResponse
from django.utils.decorators import sync_and_async_middleware

from agents.sessions import session_path
from portal import access
from portal.core.origins import SessionsOrigin, session_key
from portal.scheduling.agent import session_address

CREDENTIAL_COOKIE = "allot-notebook"
STATE_COOKIE = "allot-notebook-state"
OPEN = "_allot/open"  # on the portal: step 2
HANDOFF = "_allot/handoff"  # on the session's origin: step 3
TICKET_SALT = "allot.sessions.ticket"
CREDENTIAL_SALT = "allot.sessions.credential"
TICKET_AGE_S = 60
STATE_AGE_S = 600
SIGNED_OUT = "allot:sessions:signed-out:{}"  # cache: when the user last signed out of the portal


class NoCredential(Exception):
    """The request carries no usable credential for the session; the text says why."""


def sessions_origin() -> SessionsOrigin | None:
    """The notebooks' origin, or None when they share the portal's (sandboxed)."""
    return settings.ALLOT_SESSIONS_ORIGIN


def key_for(job) -> str:
    """The job's session key: its host's first label on an origin per session."""
    return session_key(job.pk, job.project.name, job.name)


def own_origin(job) -> str:
    """`scheme://host[:port]` the job's session is served on."""
    return sessions_origin().origin_for(key_for(job))


def session_url(job, path: str = "") -> str:
    """Where a person opens `path` (relative to the session's root) of the job's notebook:
    on the sessions' origin when there is one, else the portal's own path."""
    if sessions_origin() is None:
        return session_path(job.project.name, job.name) + path
    return session_address(job, path)


def request_key(request) -> str | None:
    """The session key the request's host names ("" on a shared sessions host), or None when
    the request came to the portal's own host."""
    origin = sessions_origin()
    return None if origin is None else origin.key_of(request.get_host())


@sync_and_async_middleware
def sessions_host_gate(get_response):
    """On the sessions' origin only sessions answer: the portal's pages, its API and its sign-in
    are never served there (a notebook's scripts must find nothing of the portal's on their own
    origin)."""

    def refuse(request) -> HttpResponse | None:
        if request_key(request) is None or request.path.startswith("/sessions/"):
            return None
        return HttpResponse("Not found: this address serves notebooks only; the portal is at "
                            f"{settings.ALLOT_PORTAL_URL}/.", status=404,
                            content_type="text/plain")  # fmt: skip

    if iscoroutinefunction(get_response):

        async def middleware(request):
            return refuse(request) or await get_response(request)

    else:

        def middleware(request):
            return refuse(request) or get_response(request)

    return middleware


# --- Step 1, on the session's origin: off to the portal -------------------------------------------


def to_portal(request, project: str, name: str) -> HttpResponse:
    """A person without a credential here goes to the portal to get one (step 1)."""
    state = secrets.token_urlsafe(24)
    query = urlencode({"state": state, "next": request.get_full_path()})
    response = HttpResponse(status=302)
    response["Location"] = f"{settings.ALLOT_PORTAL_URL}{session_path(project, name)}{OPEN}?{query}"
    _cookie(response, STATE_COOKIE, state, session_path(project, name), STATE_AGE_S)
    return response


# --- Step 2, on the portal: the ticket ------------------------------------------------------------


def ticket_redirect(request, job) -> HttpResponse:
    """Back to the session's origin with a ticket for this user, job and state (step 2). The
    caller has checked that the user may open the session."""
    state = request.GET.get("state", "")
    if not state or len(state) > 100:
        raise PermissionDenied("Open the notebook from its job page: this link carries no state.")
    root = session_path(job.project.name, job.name)
    wanted = request.GET.get("next", "")
    target = wanted if wanted.startswith(root) and "/_allot/" not in wanted else root + "lab"
    ticket = signing.dumps(
        {"u": request.user.pk, "j": job.pk, "s": _digest(state), "n": target, "t": time.time(),
         "x": secrets.token_hex(8)},
        salt=TICKET_SALT,
    )  # fmt: skip
    response = HttpResponse(status=302)
    response["Location"] = f"{own_origin(job)}{root}{HANDOFF}?{urlencode({'ticket': ticket})}"
    response["Cache-Control"] = "no-store"
    response["Referrer-Policy"] = "no-referrer"
    return response


# --- Step 3, on the session's origin: the credential ----------------------------------------------


def handoff(request, project: str, name: str, key: str) -> HttpResponse:
    """Take a ticket for the state this browser holds; set the session's credential (step 3)."""
    state = request.COOKIES.get(STATE_COOKIE, "")
    try:
        data = signing.loads(request.GET.get("ticket", ""), salt=TICKET_SALT, max_age=TICKET_AGE_S)
    except signing.BadSignature:
        raise PermissionDenied("This sign-in link is not valid or has expired: open the "
                               "notebook again from its job page.") from None  # fmt: skip
    if not state or not secrets.compare_digest(data.get("s", ""), _digest(state)):
        raise PermissionDenied("This sign-in link was made for another browser: open the "
                               "notebook from its job page.")  # fmt: skip
    if not cache.add(f"allot:sessions:ticket:{data['x']}", 1, TICKET_AGE_S * 2):
        raise PermissionDenied("This sign-in link was used already: open the notebook again.")
    user, job = _allowed(data["u"], data["j"], project, name, key, since=data["t"])
    credential = signing.dumps(
        {"u": user.pk, "j": job.pk, "p": _password_mark(user), "t": data["t"]},
        salt=CREDENTIAL_SALT,
    )  # fmt: skip
    response = HttpResponse(status=302)
    response["Location"] = data["n"]
    response["Cache-Control"] = "no-store"
    root = session_path(project, name)
    _cookie(response, CREDENTIAL_COOKIE, credential, root, settings.ALLOT_SESSIONS_CREDENTIAL_AGE_S)
    response.delete_cookie(STATE_COOKIE, path=root)
    return response


def authorize(cookies: dict, project: str, name: str, key: str):
    """(user, job) for a request or socket on the session's origin that carries a good
    credential; NoCredential when it carries none (or an expired one), Http404 or
    PermissionDenied when its user may no longer open the session."""
    value = cookies.get(CREDENTIAL_COOKIE)
    if not value:
        raise NoCredential("not signed in to this notebook")
    try:
        data = signing.loads(value, salt=CREDENTIAL_SALT,
                             max_age=settings.ALLOT_SESSIONS_CREDENTIAL_AGE_S)  # fmt: skip
    except signing.BadSignature:
        raise NoCredential("the notebook's sign-in has expired") from None
    user, job = _allowed(data["u"], data["j"], project, name, key, since=data["t"])
    if not secrets.compare_digest(data.get("p", ""), _password_mark(user)):
        raise NoCredential("the password changed since this notebook's sign-in")
    return user, job


def _allowed(user_id: int, job_id: int, project: str, name: str, key: str, since: float):
    """The user and the job, when the user is active, has not signed out of the portal since
    `since`, and may open this job's session, which the host and path both name."""
    user = get_user_model().objects.filter(pk=user_id, is_active=True).first()
    if user is None:
        raise NoCredential("the account is no longer active")
    signed_out = cache.get(SIGNED_OUT.format(user.pk))
    if signed_out is not None and signed_out >= since:
        raise NoCredential("signed out of the portal since")
    job = access.get_job_for(user, project, name)
    if job.pk != job_id or (key and key != key_for(job)):
        raise Http404(f"Job {project}/{name} not found.")
    if not access.can_open_session(user, job):
        raise PermissionDenied(f"You may not open {project}/{name}'s notebook.")
    return user, job


@receiver(user_logged_out)
def _signed_out(sender, request, user, **kwargs) -> None:
    """Signing out of the portal signs out of every notebook too (their credentials made before
    now stop working)."""
    if user is not None:
        cache.set(SIGNED_OUT.format(user.pk), time.time(),
                  settings.ALLOT_SESSIONS_CREDENTIAL_AGE_S + 60)  # fmt: skip


def _password_mark(user) -> str:
    """A mark of the user's password (not of their session): a new password ends every
    notebook sign-in made with the old one."""
    return hashlib.sha256(user.get_session_auth_hash().encode()).hexdigest()[:16]


def _digest(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def _cookie(response: HttpResponse, name: str, value: str, path: str, age: int) -> None:
    response.set_cookie(name, value, max_age=age, path=path, httponly=True, samesite="Lax",
                        secure=sessions_origin().scheme == "https")  # fmt: skip


# --- What a notebook server may set ----------------------------------------------------------


def safe_set_cookie(header: str, root: str) -> str | None:
    """A notebook server's Set-Cookie as the browser may get it: only for the session's own
    path and host (no Domain, which would reach the portal or other sessions), never one of
    the portal's or the credential's names; None when it must be dropped."""
    first, *attributes = [part.strip() for part in header.split(";")]
    cookie_name = first.partition("=")[0].strip()
    if not cookie_name or cookie_name in PORTAL_COOKIES or cookie_name.startswith("__"):
        return None
    has_path = False
    for attribute in attributes:
        key, _, value = attribute.partition("=")
        key = key.strip().lower()
        if key == "domain" or (key == "path" and not value.strip().startswith(root)):
            return None
        has_path = has_path or key == "path"
    return "; ".join([first, *attributes, *([] if has_path else [f"Path={root}"])])


# The portal's cookies and the notebooks' credential: never handed to a notebook server, never
# set by one
PORTAL_COOKIES = frozenset({
    CREDENTIAL_COOKIE, STATE_COOKIE, settings.SESSION_COOKIE_NAME, settings.CSRF_COOKIE_NAME,
    "sessionid", "csrftoken",
})  # fmt: skip


# --- Websockets ----------------------------------------------------------------------------------


class WebsocketOriginGate:
    """Which page may open which socket. On the portal's host: pages of the portal's hosts
    (ALLOWED_HOSTS, as Channels' AllowedHostsOriginValidator checks) but never a notebook's - in
    production the sessions' origin is usually the same site as the portal, so a browser would
    send the portal's cookie with a socket a notebook's script opens to a job's shell. On the
    sessions' origin: session sockets only, whose consumer checks that the page is the
    session's own."""

    def __init__(self, application) -> None:
        self.application = application
        self.portal = AllowedHostsOriginValidator(application)

    async def __call__(self, scope, receive, send):
        origin = sessions_origin()
        if origin is not None and scope["type"] == "websocket":
            headers = dict(scope.get("headers", []))
            host = headers.get(b"host", b"").decode("latin-1")
            page = urlsplit(headers.get(b"origin", b"").decode("latin-1"))
            if origin.key_of(host) is not None:
                if scope["path"].startswith("/sessions/"):
                    return await self.application(scope, receive, send)
                return await WebsocketDenier()(scope, receive, send)
            if page.netloc and origin.key_of(page.netloc) is not None:
                return await WebsocketDenier()(scope, receive, send)
        return await self.portal(scope, receive, send)
