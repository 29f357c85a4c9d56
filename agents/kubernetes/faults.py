"""What a failed API call means for the agent, and the per-job back-off of those worth retrying.

Every failure is one of four kinds (issue 25 item 1):

- **unreachable**: no answer at all (connection refused, a timeout, TLS) or 401 (the credentials
  are refused). Every other call would fail alike, so the agent backs off as a whole and
  `Observation.problem` says why.
- **transient**: 429 or a 5xx about one object (a webhook failing for one namespace, etcd
  having a bad moment), or old pods of the same name still terminating. That job alone backs
  off (1 s doubling to the agent's maximum); the others go on.
- **setting up**: the project's namespace was just created and its `default` service account
  is not there yet (403 "error looking up service account"; older servers answered 500 or 403
  "No API token found for service account"), or the namespace is not found or still being
  deleted (issue 25 item 5).
  Retried at once a few times, then per job for a while; then it counts as permanent.
- **permanent**: any other 4xx (400, 403, 404 on create, 405, 409 that does not mean "exists",
  422) and errors of Allot's own making (a command `shlex` cannot split). Retrying cannot
  help: a start fails the job with the API's message, a stop is given up and logged.

Deletes treat 404 as done and creates treat 409 AlreadyExists as done before anything gets here.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

Kind = Literal["unreachable", "transient", "setting-up", "permanent"]
SEVERITY: dict[Kind, int] = {"permanent": 0, "setting-up": 1, "transient": 2, "unreachable": 3}


class Retry(Exception):
    """A failure of Allot's own finding that a later attempt may not meet (old pods of the same
    name still terminating): transient."""


class DeviceHeld(Retry):
    """A device of the placement is still held by a live pod of another job (issue 40): that
    pod is going (being deleted, or its job evicted), so the start is tried again soon at an
    even pace, not after a back-off that doubles to a minute."""


def _status_body(exc: ApiException) -> dict:
    try:
        body = json.loads(exc.body or "{}")
    except (ValueError, TypeError):
        return {}
    return body if isinstance(body, dict) else {}


def api_message(exc: ApiException) -> str:
    """The `message` of the API's Status body ("" without one)."""
    return str(_status_body(exc).get("message") or "")


def api_reason(exc: ApiException) -> str:
    """The `reason` of the API's Status body ("AlreadyExists", "NotFound"; "" without one)."""
    return str(_status_body(exc).get("reason") or "")


def namespace_not_ready(exc: Exception) -> bool:
    """True when the failure says the namespace is still being set up (or torn down)."""
    if not isinstance(exc, ApiException):
        return False
    message = api_message(exc).lower()
    if "no api token found for service account" in message:  # 500, or 403 on older servers
        return exc.status in (403, 500)
    if exc.status == 403:
        return "error looking up service account" in message or "being terminated" in message
    if exc.status == 404:
        return (_status_body(exc).get("details") or {}).get("kind") == "namespaces"
    return False


def kind(exc: Exception) -> Kind:
    """The kind of one failure (see the module docstring)."""
    if isinstance(exc, Retry):
        return "transient"
    if isinstance(exc, ApiException):
        if not exc.status or exc.status == 401:
            return "unreachable"
        if namespace_not_ready(exc):
            return "setting-up"
        if exc.status == 429 or exc.status >= 500:
            return "transient"
        return "permanent"
    if isinstance(exc, (HTTPError, OSError)):
        return "unreachable"
    return "permanent"


def worst(errors: Iterable[Exception]) -> Exception:
    """The failure that decides what happens next when several objects failed: the one a retry
    may cure (unreachable, then transient) before one that no retry will."""
    return max(errors, key=lambda exc: SEVERITY[kind(exc)])


def describe(exc: Exception) -> str:
    """A failure in one line, with the message of the API's Status body when it has one."""
    if isinstance(exc, ApiException):
        message = api_message(exc)
        verb = "refused" if exc.status and exc.status < 500 else "answered"
        text = f"the API server {verb}: {exc.status} {exc.reason or ''}".strip()
        return f"{text}: {message}" if message else text
    if isinstance(exc, Retry):
        return str(exc)
    if isinstance(exc, (HTTPError, OSError)):
        return f"cannot reach the API server ({type(exc).__name__})"
    return f"{type(exc).__name__}: {exc}"


@dataclass
class _Deferral:
    tries: int
    retry_at: float
    since: float
    message: str


class Backoff:
    """Per-key back-off: `defer` after a failure, `due` says when to try again, `clear` after a
    success. A key's first wait is `first_s`, doubling on each failure up to `max_s`; each wait
    set is also told to `waited` (the agent's metrics count them)."""

    def __init__(self, monotonic: Callable[[], float], max_s: float,
                 waited: Callable[[float], None] = lambda wait_s: None):  # fmt: skip
        self.monotonic = monotonic
        self.max_s = max_s
        self.waited = waited
        self._deferred: dict[object, _Deferral] = {}

    def due(self, key: object) -> bool:
        deferral = self._deferred.get(key)
        return deferral is None or self.monotonic() >= deferral.retry_at

    def defer(self, key: object, message: str, first_s: float = 1.0) -> float:
        """Record a failure of `key`; the wait before its next attempt."""
        now = self.monotonic()
        old = self._deferred.get(key)
        tries = old.tries + 1 if old else 1
        wait = min(first_s * 2.0 ** (tries - 1), self.max_s)
        self._deferred[key] = _Deferral(tries, now + wait, old.since if old else now, message)
        self.waited(wait)
        return wait

    def failing_for(self, key: object) -> float:
        """Seconds since the key's first failure in a row (0 when it is not failing)."""
        deferral = self._deferred.get(key)
        return self.monotonic() - deferral.since if deferral else 0.0

    def message(self, key: object) -> str:
        deferral = self._deferred.get(key)
        if deferral is None:
            return ""
        left = max(deferral.retry_at - self.monotonic(), 0.0)
        return f"{deferral.message}; retrying in {left:.0f} s"

    def clear(self, key: object) -> None:
        self._deferred.pop(key, None)
