"""`/sessions/{project}/{name}/…`: a job's Jupyter server, through the portal only.

An HTTP reverse proxy (an async view) and a websocket proxy (a Channels consumer, for kernels).
Both check the same thing first, through `portal.access`: the user is signed in, may see
the job (else 404, as everywhere), and may open its notebook - its owner, whom it is shared
with, or an admin during an audited access (`access.can_open_session`; others get 403). Only
then is the request passed on, with the server's token added, so the
token never reaches the browser and the server answers nobody who did not come through here.

The agent says where the server answers (`get_agent().sessions`, the object the cycle starts
sessions through): under the simulated agent a local JupyterLab (`agents.sessions`), under
Kubernetes the pod's port 8888, reached through the job's Service (step 6). An agent that runs no
sessions leaves the page waiting.

Speed (issue 24 item 1): one HTTP client per event loop, its connections kept alive, serves
every request (a new client costs ~45 ms of the loop's time to build its TLS context, and
JupyterLab's first page asks for ~100 files). A visit to the lab while it is not up yet goes to
the job's page, which shows how far the session is and opens the lab when it answers
(`portal.web.session_steps`); JupyterLab's own requests then get a plain 503 to retry.

Cross-site writes: the proxy adds the server's token, which switches Jupyter's own XSRF check
off, and Jupyter's requests carry no Django CSRF token, so the proxy checks the origin itself: a
request that may change state (not GET, HEAD, OPTIONS or TRACE) must come from the portal's own
pages - its Origin (or, without one, its Referer) the portal's scheme and host or one of
CSRF_TRUSTED_ORIGINS - else 403 (issue 22 item 6). Websockets are checked before they get here,
by Channels' AllowedHostsOriginValidator in portal.asgi.
"""

from __future__ import annotations

import asyncio
import contextlib
import http.cookiejar
import weakref
from urllib.parse import quote, urlsplit

import httpx
from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.views.decorators.csrf import csrf_exempt
from rest_framework.exceptions import APIException

from agents.sessions import Session, session_path
from portal import access
from portal.jobs.models import ACTIVE
from portal.scheduling import lifecycle
from portal.scheduling.agent import get_agent
from portal.web import session_origin as origins

HOP_BY_HOP = frozenset({
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
    "transfer-encoding", "upgrade", "host", "content-length", "origin", "referer",
})  # fmt: skip
PORTAL_COOKIES = origins.PORTAL_COOKIES  # never handed to the notebook server
# Where notebooks share the portal's origin: the browser runs their pages in an opaque origin of
# their own, with no access to the portal's cookies, storage or pages (and JupyterLab, which
# needs its own origin, does not work: set ALLOT_SESSIONS_ORIGIN).
SANDBOX = "sandbox allow-scripts allow-forms allow-popups allow-modals allow-downloads"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
SHUTDOWN = "api/shutdown"  # Jupyter Server's "shut down the server" (JupyterLab's File menu)
TIMEOUT = httpx.Timeout(60.0, connect=5.0)
LIMITS = httpx.Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=30.0)
_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # event loop -> its client


class _NoCookies(http.cookiejar.DefaultCookiePolicy):
    """The shared client keeps no cookie: each request carries only its browser's (one
    session's server must never get another's cookies, which a jar would send to every port of
    127.0.0.1)."""

    def set_ok(self, cookie, request) -> bool:
        return False

    def return_ok(self, cookie, request) -> bool:
        return False


def _client() -> httpx.AsyncClient:
    """This event loop's client to the sessions' servers (built once: see "Speed" above)."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None or client.is_closed:
        jar = http.cookiejar.CookieJar(policy=_NoCookies())
        client = _clients[loop] = httpx.AsyncClient(timeout=TIMEOUT, limits=LIMITS, cookies=jar)
    return client


def find_session(user, project: str, name: str) -> tuple[object, Session | None]:
    """(job, its session or None) after the access checks: 404 when the job is not visible,
    403 when the user may not run code in its project."""
    job = access.get_job_for(user, project, name)
    if not access.can_open_session(user, job):
        owner = job.user.get_username() if job.user else "nobody"
        raise PermissionDenied(f"{project}/{name} is {owner}'s notebook: it opens to others only "
                               "when shared, or to admins through Access server on its job "
                               "page.")  # fmt: skip
    sessions = get_agent().sessions
    return job, sessions.get(project, name) if sessions is not None else None


def _cookies_without_portal(header: str) -> str:
    parts = [part.strip() for part in header.split(";") if part.strip()]
    return "; ".join(p for p in parts if p.split("=", 1)[0].strip() not in PORTAL_COOKIES)


def upstream_headers(headers, token: str) -> dict[str, str]:
    """The browser's headers to pass on: hop-by-hop ones and the portal's cookies removed, the
    server's token added."""
    passed = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
    passed.pop("Cookie", None)
    cookie = _cookies_without_portal(headers.get("Cookie", ""))
    if cookie:
        passed["Cookie"] = cookie
    passed["Authorization"] = f"token {token}"
    passed["Accept-Encoding"] = "identity"  # bodies the proxy can read (see _without_token)
    return passed


def cross_site(request: HttpRequest, own: str | None = None) -> str | None:
    """Why a request that may change state did not come from the session's own pages (`own`,
    its origin; the portal's when None), or None when it did (or cannot change state)."""
    if request.method in SAFE_METHODS:
        return None
    origin = request.headers.get("Origin")
    if origin is None:
        referer = urlsplit(request.headers.get("Referer", ""))
        if not referer.scheme or not referer.netloc:
            return "it names neither its Origin nor its Referer"
        origin = f"{referer.scheme}://{referer.netloc}"
    if own is not None:
        return None if origin == own else f"it comes from {origin[:200]}, not from {own}"
    portal = f"{request.scheme}://{request.get_host()}"
    if origin == portal or origin in settings.CSRF_TRUSTED_ORIGINS:
        return None
    return f"it comes from {origin[:200]}, not from this portal ({portal})"


# CSRF: Jupyter's own requests carry no Django CSRF token, and the token the proxy adds turns
# Jupyter's XSRF check off, so `cross_site` checks the origin of writes instead (the session
# cookie's SameSite=Lax alone leaves same-site pages and old browsers).
@csrf_exempt
async def session_proxy(request: HttpRequest, project: str, name: str, path: str = ""):
    """Pass one HTTP request to the job's Jupyter server and stream its answer back: on the
    sessions' origin when there is one (the portal's own host then only sends people there),
    else on the portal's origin, sandboxed."""
    refusal = unsafe_path(request)
    if refusal is not None:
        return HttpResponse(f"Refused: {refusal}.", status=400, content_type="text/plain")
    key = origins.request_key(request)
    if key is not None:
        return await _on_sessions_origin(request, project, name, path, key)
    user = await request.auser()
    if not user.is_authenticated:
        return redirect_to_login(request.get_full_path())
    if origins.sessions_origin() is not None:
        return await sync_to_async(_on_portal)(request, user, project, name, path)
    refusal = cross_site(request)
    if refusal is not None:
        return _cross_site_refusal(request, refusal)
    job, session = await sync_to_async(find_session)(user, project, name)
    if request.method == "POST" and path == SHUTDOWN:
        return await sync_to_async(shut_down)(user, job)
    return await _proxy(request, job, session, sandbox=True)


def shut_down(user, job) -> HttpResponse:
    """JupyterLab's File > Shut Down is the job's Stop (issue 34 item 1): Stopped and resumable,
    with its event, instead of a server that exits under the job, which the cycle then reports
    as Failed. The agent stops the server as for any Stop. Those who may not stop the job (a
    teammate it was shared with) are told so, and the server keeps running."""
    if not access.can_change_job(user, job):
        return HttpResponse(f"Only the owner of {job.project.name}/{job.name} or an admin of "
                            f"{job.project.name} stops this notebook.", status=403,
                            content_type="text/plain")  # fmt: skip
    try:
        lifecycle.stop(job, user)
    except APIException as exc:  # it is not running any more
        return HttpResponse(str(exc.detail), status=exc.status_code, content_type="text/plain")
    return HttpResponse(status=200)


async def _on_sessions_origin(request: HttpRequest, project: str, name: str, path: str,
                              key: str):  # fmt: skip
    """A request on the sessions' origin: the hand-off, or the credential's user's request."""
    if path == origins.HANDOFF:
        return await sync_to_async(origins.handoff)(request, project, name, key)
    try:
        user, job = await sync_to_async(origins.authorize)(request.COOKIES, project, name, key)
    except origins.NoCredential as exc:
        if request.method == "GET" and _navigation(request):
            return origins.to_portal(request, project, name)
        return HttpResponse(f"Not signed in to this notebook ({exc}): open it from its job page "
                            f"at {settings.ALLOT_PORTAL_URL}/jobs/{project}/{name}/.",
                            status=403, content_type="text/plain")  # fmt: skip
    refusal = cross_site(request, origins.own_origin(job))
    if refusal is not None:
        return _cross_site_refusal(request, refusal)
    if request.method == "POST" and path == SHUTDOWN:
        return await sync_to_async(shut_down)(user, job)
    sessions = get_agent().sessions
    session = sessions.get(project, name) if sessions is not None else None
    if (
        (session is None or not job.holds_gpus) and request.method == "GET" and _navigation(request)
    ):  # the portal's job page waits for it, and opens it when it answers
        return redirect(f"{settings.ALLOT_PORTAL_URL}{request.get_full_path()}")
    return await _proxy(request, job, session, sandbox=False)


def _on_portal(request: HttpRequest, user, project: str, name: str, path: str) -> HttpResponse:
    """A request for a session on the portal's own host, when sessions have an origin of their
    own: the ticket of the hand-off, a person sent on to the session's origin (or to the job's
    page while the lab is not up), and nothing else."""
    job, session = find_session(user, project, name)
    if path == origins.OPEN:
        return origins.ticket_redirect(request, job)
    if request.method != "GET" or not _navigation(request):
        return HttpResponse(f"Notebooks are served at their own address, not the portal's: "
                            f"{origins.session_url(job)}", status=404,
                            content_type="text/plain")  # fmt: skip
    if session is None or not job.holds_gpus:
        return _not_running(request, job)
    query = request.META.get("QUERY_STRING", "")
    return redirect(origins.session_url(job, path) + (f"?{query}" if query else ""))


async def _proxy(request: HttpRequest, job, session: Session | None, sandbox: bool):
    """The server's answer to the request, or why there is none."""
    project, name = job.project.name, job.name
    if session is None or not job.holds_gpus:
        response = await sync_to_async(_not_running)(request, job)
    else:
        try:
            upstream = await _send(_client(), request, session)
        except httpx.ConnectError:  # (re)starting: the job's page waits for it
            response = await sync_to_async(_not_running)(request, job)
        except httpx.HTTPError as exc:
            response = HttpResponse(f"The Jupyter server of {project}/{name} did not answer: "
                                    f"{exc}", status=502, content_type="text/plain")  # fmt: skip
        else:
            response = await _answer(upstream, session.token, session_path(project, name))
    if sandbox:  # a second policy: the browser enforces both, whatever the server sent
        theirs = response.headers.get("Content-Security-Policy")
        response.headers["Content-Security-Policy"] = ", ".join(filter(None, (theirs, SANDBOX)))
    return response


def _cross_site_refusal(request: HttpRequest, refusal: str) -> HttpResponse:
    return HttpResponse(f"Refused: a {request.method} to a notebook must come from the "
                        f"notebook's own pages, and {refusal}.", status=403,
                        content_type="text/plain")  # fmt: skip


def unsafe_path(request: HttpRequest) -> str | None:
    """Why the request's path may not be passed on, or None (see `path_refusal`)."""
    raw = request.scope.get("raw_path", b"") if hasattr(request, "scope") else b""
    return path_refusal(request.path, raw)


def path_refusal(path: str, raw: bytes | str | None) -> str | None:
    """Why a proxied path (decoded, and `raw` as the server received it, when it says) may not
    reach a notebook server: a dot segment, an encoded slash or backslash, a NUL - each could
    name another session's files on the server; None when it may."""
    raw = (raw.decode("latin-1") if isinstance(raw, bytes) else raw or "").lower()
    if any(code in raw for code in ("%2f", "%5c", "%00")):
        return "the path holds an encoded slash, backslash or NUL"
    if any(segment in (".", "..") for segment in path.split("/")) or "\\" in path:
        return "the path holds a dot segment or a backslash"
    if "\x00" in path:
        return "the path holds a NUL"
    return None


def upstream_url(request: HttpRequest, session: Session) -> str:
    """The request's path and query on the session's server."""
    url = f"http://{session.host}:{session.port}{quote(request.path)}"
    if request.META.get("QUERY_STRING"):
        url += "?" + request.META["QUERY_STRING"]
    return url


async def _send(client: httpx.AsyncClient, request: HttpRequest, session: Session):
    """Send the browser's request on with the server's token; the answer's body is not read."""
    return await client.send(
        client.build_request(request.method, upstream_url(request, session),
                             headers=upstream_headers(request.headers, session.token),
                             content=request.body),
        stream=True,
    )  # fmt: skip


async def _answer(upstream: httpx.Response, token: str, root: str):
    """The server's answer for the browser, its hop-by-hop headers dropped and its cookies
    kept to the session's own path and host: a page whole and without the token, anything
    else streamed as it comes."""
    if upstream.headers.get("content-type", "").startswith("text/html"):
        response = await _page(upstream, token)
    else:
        response = StreamingHttpResponse(_body(upstream), status=upstream.status_code)
    for key, value in upstream.headers.multi_items():
        if key.lower() == "set-cookie":
            kept = origins.safe_set_cookie(value, root)
            if kept is not None:
                response.cookies.load(kept)
        elif key.lower() not in HOP_BY_HOP:
            response.headers[key] = value
    return response


async def _page(upstream: httpx.Response, token: str) -> HttpResponse:
    """A whole HTML page, read and closed, without the server's token."""
    page = await upstream.aread()
    await upstream.aclose()
    return HttpResponse(_without_token(page, token), status=upstream.status_code)


async def _body(upstream: httpx.Response):
    """The answer's body as it arrives; the connection goes back to the pool when it ends (or
    is dropped when the browser goes first)."""
    try:
        async for chunk in upstream.aiter_raw():
            yield chunk
    finally:
        await upstream.aclose()


def _without_token(page: bytes, token: str) -> bytes:
    """JupyterLab writes its server's token into the page's config; the browser must not get it
    (the proxy adds it to every request, so the page works without)."""
    return page.replace(token.encode(), b"")


def _not_running(request: HttpRequest, job) -> HttpResponse:
    """No server answers (yet): a person opening the lab goes to the job's page, which opens it
    when it answers; JupyterLab's own requests get a 503 to try again."""
    project, name = job.project.name, job.name
    if request.method == "GET" and _navigation(request):
        open_later(request, project, name, request.get_full_path())
        return redirect("job-detail", project=project, name=name)
    state = "is not answering yet" if job.status in ACTIVE else "does not run"
    response = HttpResponse(f"The Jupyter server of {project}/{name} {state} ({job.status}).",
                            status=503, content_type="text/plain")  # fmt: skip
    response["Retry-After"] = "1"
    return response


def _navigation(request: HttpRequest) -> bool:
    """True when a person's browser opens the address (not a script's or JupyterLab's fetch)."""
    mode = request.headers.get("Sec-Fetch-Mode")
    return mode == "navigate" or (mode is None and "text/html" in request.headers.get("Accept", ""))


def open_later(request: HttpRequest, project: str, name: str, path: str) -> None:
    """Have the job's page open `path` (in the job's session) once the lab answers."""
    if path.startswith(session_path(project, name)):
        request.session[f"allot-open:{project}/{name}"] = path


def take_open(request: HttpRequest, project: str, name: str) -> str:
    """Where the job's page should go once the lab answers (asked once), or ""."""
    return request.session.pop(f"allot-open:{project}/{name}", "")


class SessionProxyConsumer(AsyncWebsocketConsumer):
    """A websocket of the job's Jupyter server (kernels, terminals, events), relayed both ways,
    and closed within ALLOT_SESSIONS_RECHECK_S of its user losing access (item 4: removed from
    the project, deactivated, signed out, password changed, the share revoked, the job
    stopped), since a kernel's socket runs code for as long as it is open."""

    upstream = None
    relay: asyncio.Task | None = None
    watch: asyncio.Task | None = None
    revoked = False

    async def connect(self) -> None:
        kwargs = self.scope["url_route"]["kwargs"]
        project, name = kwargs["project"], kwargs["name"]
        self.allowed = await self._checker(project, name)
        session = None
        if self.allowed is not None:
            try:
                session = await sync_to_async(self.allowed)()
            except Exception:  # 404 / 403 / no credential: refuse the handshake, say no more
                session = None
        if session is None:
            await self.close()
            return
        from websockets.asyncio.client import connect

        path = quote(self.scope["path"])
        query = self.scope.get("query_string", b"").decode()
        url = f"ws://{session.host}:{session.port}{path}" + (f"?{query}" if query else "")
        try:
            self.upstream = await connect(
                url, additional_headers={"Authorization": f"token {session.token}"},
                subprotocols=self.scope.get("subprotocols") or None, max_size=None,
                origin=f"http://{session.host}:{session.port}",
            )  # fmt: skip
        except Exception:
            await self.close()
            return
        await self.accept(subprotocol=self.upstream.subprotocol)
        self.relay = asyncio.create_task(self._relay())
        self.watch = asyncio.create_task(self._watch())

    async def _checker(self, project: str, name: str):
        """A function that answers the socket's session while its user may still use it and
        raises otherwise, or None when the handshake is refused outright."""
        headers = dict(self.scope.get("headers", []))
        host = headers.get(b"host", b"").decode("latin-1")
        origin = headers.get(b"origin", b"").decode("latin-1")
        refusal = path_refusal(self.scope["path"], self.scope.get("raw_path"))
        if "/_allot/" in self.scope["path"] or refusal is not None:
            return None
        sessions_origin = origins.sessions_origin()
        if sessions_origin is None:  # one origin: the portal's session, its own Origin check
            user = self.scope.get("user")
            if user is None or not user.is_authenticated:
                return None

            def allowed_here():  # the user as stored now (deactivated, no longer staff)
                fresh = get_user_model().objects.get(pk=user.pk, is_active=True)
                return _live_session(find_session(fresh, project, name)[0])

            return allowed_here
        key = sessions_origin.key_of(host)
        if key is None:  # the portal's own host serves no session sockets then
            return None
        cookies = dict(self.scope.get("cookies") or {})

        def allowed():
            _, job = origins.authorize(cookies, project, name, key)
            if origin != origins.own_origin(job):  # another session's (or site's) page
                raise PermissionDenied(f"a socket from {origin[:100]}")
            return _live_session(job)

        return allowed

    async def _watch(self) -> None:
        """Check again every ALLOT_SESSIONS_RECHECK_S; close both ends when access is gone."""
        while True:
            await asyncio.sleep(settings.ALLOT_SESSIONS_RECHECK_S)
            try:
                still = await sync_to_async(self.allowed)()
            except Exception:
                still = None
            if still is None:
                self.revoked = True
                await self.close(code=4403)
                if self.upstream is not None:
                    with contextlib.suppress(Exception):
                        await self.upstream.close()
                return

    async def _relay(self) -> None:
        try:
            async for message in self.upstream:
                if isinstance(message, bytes):
                    await self.send(bytes_data=message)
                else:
                    await self.send(text_data=message)
        except Exception:
            pass
        if not self.revoked:  # else closed already, saying why
            await self.close()

    async def receive(self, text_data=None, bytes_data=None) -> None:
        if self.upstream is not None:
            await self.upstream.send(bytes_data if bytes_data is not None else text_data)

    async def disconnect(self, code: int) -> None:
        for task in (self.relay, self.watch):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        if self.upstream is not None:
            with contextlib.suppress(Exception):
                await self.upstream.close()


def _live_session(job) -> Session | None:
    """The job's session while the job (as just read from the database) holds its GPUs, else
    None."""
    if not job.holds_gpus:
        return None
    sessions = get_agent().sessions
    return sessions.get(job.project.name, job.name) if sessions is not None else None
