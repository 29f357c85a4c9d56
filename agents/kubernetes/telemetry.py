"""What the agent's calls to the API server cost: failed calls and back-off waits, counted.

An operator watching Allot wants to see the API server refuse or fail calls (a webhook denying
pods, etcd timing out, a ResourceQuota) and the agent waiting because of it, before users see
their jobs wait. The agent counts both here, in its own process, with no Django: the portal
takes the counts after each cycle (`take`, which resets them) and adds them to the totals every
process shares, where `/metrics` reads them.

- A failed call is counted by its **verb** as the API server names it (get, list, watch,
  create, update, patch, delete, deletecollection), its **resource** as kubectl names it
  (`pods`, `pods/binding`, `ingresses.networking.k8s.io`, `jobs.batch/status`) and its **code**,
  the HTTP status, or `none` when no answer came (refused connection, timeout, TLS). Answers the
  agent takes as done are not failures: 404 to a delete (already gone) and 409 AlreadyExists to
  a create (already there, faults' module docstring).
- A back-off is counted by its **scope**: `agent` (the whole agent waits: the API server cannot
  be reached), `job` (one job's start or stop waits, faults.Backoff) or `watch` (the pod watch
  waits before listing again), with the seconds of each wait it set.
"""

from __future__ import annotations

import threading
from collections import Counter

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from agents.base import AgentCounts
from agents.kubernetes import faults

VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get"}


class Tally:
    """Thread-safe counts of failed calls and back-offs since the last `take`."""

    def __init__(self):
        self._lock = threading.Lock()
        self._errors: Counter[tuple[str, str, str]] = Counter()
        self._backoffs: Counter[str] = Counter()
        self._waited: Counter[str] = Counter()

    def failed(self, verb: str, resource: str, code: str) -> None:
        with self._lock:
            self._errors[(verb, resource, code)] += 1

    def backed_off(self, scope: str, wait_s: float) -> None:
        with self._lock:
            self._backoffs[scope] += 1
            self._waited[scope] += wait_s

    def take(self) -> AgentCounts:
        """The counts since the last call, and start again from zero."""
        with self._lock:
            taken = AgentCounts(dict(self._errors), dict(self._backoffs), dict(self._waited))
            self._errors, self._backoffs, self._waited = Counter(), Counter(), Counter()
        return taken


class CountingApiClient(client.ApiClient):
    """The official client's ApiClient, counting each call that fails into `tally`."""

    def __init__(self, configuration: client.Configuration, tally: Tally):
        super().__init__(configuration)
        self.tally = tally

    def call_api(self, resource_path, method, *args, **kwargs):
        try:
            return super().call_api(resource_path, method, *args, **kwargs)
        except (ApiException, HTTPError, OSError) as exc:
            code = _code(exc)
            if not _done(method, code, exc):
                query = kwargs.get("query_params") or (args[1] if len(args) > 1 else None)
                self.tally.failed(verb(method, resource_path, query), resource(resource_path),
                                  code)  # fmt: skip
            raise


def _code(exc: Exception) -> str:
    status = getattr(exc, "status", 0) if isinstance(exc, ApiException) else 0
    return str(status) if status else "none"


def _done(method: str, code: str, exc: Exception) -> bool:
    """True for the answers the agent takes as done (see the module docstring)."""
    if method == "DELETE" and code == "404":
        return True
    if method == "POST" and code == "409" and isinstance(exc, ApiException):
        return faults.api_reason(exc) == "AlreadyExists"
    return False


def verb(method: str, path: str, query) -> str:
    """The API server's verb for a call: a GET of a collection is a list (a watch with
    `watch=true`), a DELETE of one a deletecollection."""
    named = _parts(path)[1]
    if method == "GET" and not named:
        return "watch" if any(k == "watch" and v for k, v in query or ()) else "list"
    if method == "DELETE" and not named:
        return "deletecollection"
    return VERBS.get(method, method.lower())


def resource(path: str) -> str:
    """kubectl's name of the resource a path template (`/api/v1/namespaces/{namespace}/pods/
    {name}/log`) calls: `pods/log`; group-qualified outside the core group."""
    return _parts(path)[0]


def _parts(path: str) -> tuple[str, bool]:
    """(resource name, whether one object is named) of a path template."""
    segments = [s for s in path.strip("/").split("/") if s]
    if segments[:1] == ["api"]:
        group, rest = "", segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        group, rest = segments[1], segments[3:]
    else:
        return path, False
    if len(rest) > 2 and rest[0] == "namespaces":
        rest = rest[2:]  # namespaces/{namespace}/<resource>...
    if not rest:
        return path, False
    name = rest[0] + (f".{group}" if group else "")
    named = len(rest) > 1
    subresource = rest[2] if len(rest) > 2 else ""
    return (f"{name}/{subresource}" if subresource else name), named
