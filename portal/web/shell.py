"""`/ws/jobs/{project}/{name}/shell/`: a terminal in a running job's first pod (`allot bash`).

The CLI connects with its API token (`Authorization: Token …`), a browser with its session; the
access check is the one every job route uses (`portal.access`): a job the user cannot
see is refused as not found (close code 4404), a viewer may not run code (4403). The job must be
Running on an agent that opens shells in its containers (`supports_shell`: the Kubernetes agent;
4409 otherwise), whose shell (`agents.base.Shell`, the exec stream of `agents.kubernetes.shell`)
is then relayed both ways:

- binary messages from the client are keystrokes; a text message `{"resize": [columns, rows]}`
  resizes the terminal;
- binary messages to the client are what the terminal prints; the last message is the text
  `{"exit": code}` (code null when unknown), then the socket closes;
- the socket closes with 4403 within ALLOT_SESSIONS_RECHECK_S of the user losing the right to
  it (token revoked, signed out, deactivated, removed from the project, the job stopped).
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404

from portal import access
from portal.jobs.models import Status
from portal.scheduling.agent import get_agent, job_spec

NOT_SIGNED_IN, FORBIDDEN, NOT_FOUND, NOT_POSSIBLE, CLUSTER_ERROR = 4401, 4403, 4404, 4409, 4502


def token_secret(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The key of an `Authorization: Token <key>` header, else None."""
    for key, value in headers:
        if key.lower() == b"authorization":
            scheme, _, secret = value.decode("latin-1").partition(" ")
            if scheme.lower() == "token" and secret.strip():
                return secret.strip()
    return None


def token_user(headers: list[tuple[bytes, bytes]]):
    """The user of a live `Authorization: Token <key>` header, else None."""
    from portal.tenancy import services

    secret = token_secret(headers)
    if secret is None:
        return None
    try:
        return services.use_token(secret).user
    except services.TokenRejected:
        return None


def still_allowed(scope, user, project: str, name: str) -> bool:
    """Whether the socket's user may still use the job's shell (issue 32 item 4): their token
    live or their sign-in not ended, the account active, the job visible to them, theirs to
    run code in, and still Running."""
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.base import SessionBase

    from portal.tenancy import services

    secret = token_secret(scope.get("headers", []))
    if secret is not None:
        try:
            services.use_token(secret)
        except services.TokenRejected:
            return False
    session = scope.get("session")
    if secret is None and isinstance(session, SessionBase):
        if session.session_key is None or not session.exists(session.session_key):
            return False  # signed out (or the session ended) since the socket opened
    if not get_user_model().objects.filter(pk=user.pk, is_active=True).exists():
        return False
    try:
        job = access.get_job_for(user, project, name)
    except Http404:
        return False
    return access.can_change_job(user, job) and job.status == Status.RUNNING


def open_job_shell(user, project: str, name: str):
    """The job's shell after the checks, or the close code that refuses it."""
    try:
        job = access.get_job_for(user, project, name)
    except Http404:
        return None, NOT_FOUND
    if not access.can_change_job(user, job):
        return None, FORBIDDEN
    agent = get_agent()
    if job.status != Status.RUNNING or not agent.supports_shell:
        return None, NOT_POSSIBLE
    try:
        return agent.open_shell(job_spec(job)), None
    except Exception:  # the API server refused or is unreachable
        return None, CLUSTER_ERROR


class JobShellConsumer(AsyncWebsocketConsumer):
    """Relays one exec stream (see the module docstring)."""

    shell = None
    relay: asyncio.Task | None = None
    watch: asyncio.Task | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            user = await database_sync_to_async(token_user)(self.scope.get("headers", []))
        if user is None:
            await self.close(code=NOT_SIGNED_IN)
            return
        kwargs = self.scope["url_route"]["kwargs"]
        try:
            self.shell, refused = await database_sync_to_async(open_job_shell)(
                user, kwargs["project"], kwargs["name"]
            )
        except PermissionDenied:
            self.shell, refused = None, FORBIDDEN
        if refused:
            await self.close(code=refused)
            return
        await self.accept()
        self.relay = asyncio.create_task(self._relay())
        self.watch = asyncio.create_task(self._watch(user, kwargs["project"], kwargs["name"]))

    async def _watch(self, user, project: str, name: str) -> None:
        """Close within ALLOT_SESSIONS_RECHECK_S of the user losing the right to this shell."""
        while True:
            await asyncio.sleep(settings.ALLOT_SESSIONS_RECHECK_S)
            allowed = await database_sync_to_async(still_allowed)(self.scope, user, project, name)
            if not allowed:
                await self.close(code=FORBIDDEN)
                if self.shell is not None:
                    await asyncio.to_thread(self.shell.close)
                return

    async def _relay(self) -> None:
        shell = self.shell
        while shell.open:
            data = await asyncio.to_thread(shell.read, 0.2)
            if data:
                await self.send(bytes_data=data)
        await self.send(text_data=json.dumps({"exit": shell.exit_code}))
        await self.close(code=1000)

    async def receive(self, text_data=None, bytes_data=None) -> None:
        if self.shell is None:
            return
        if bytes_data:
            await asyncio.to_thread(self.shell.write, bytes_data)
            return
        with contextlib.suppress(ValueError, TypeError, KeyError, RecursionError):  # bad input
            columns, rows = json.loads(text_data or "{}")["resize"]
            await asyncio.to_thread(self.shell.resize, int(columns), int(rows))

    async def disconnect(self, code) -> None:
        for task in (self.relay, self.watch):
            if task is not None and task is not asyncio.current_task():
                task.cancel()
        if self.shell is not None:
            await asyncio.to_thread(self.shell.close)
