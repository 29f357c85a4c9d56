"""Schemathesis hooks for test_schema_conformance.py: what the OpenAPI schema cannot say.

A JSON Schema describes each query parameter alone. Two of the API's ranges are also bounded
together - `from` before `to` at most 400 days apart in steps giving at most 5,000 points
(analytics), `since` before `until` at most 400 days apart (accounting) - and each says so in
its description, with a 400 naming the field when it is not so. A request the generator means
to be valid ("positive") has its range put in order here, so that `positive_data_acceptance`
checks everything else about it; what is refused is tested by the API's own tests. A new
user's password likewise passes Django's validators (at least 8 characters, not common, not all
digits, not like the username: said in words in the schema), and a token's expiry time is in
the future, within ten years, a node's failed devices are among its GPUs and a project's GPU
limit is at least its quota (a PATCH of the quota alone also lifts the limit, which may be under
it): no JSON Schema can state these. No key of an object holds a NUL character (the schema says
no text may). Requests meant to be invalid are sent as generated.
"""

from __future__ import annotations

import re
import secrets
from datetime import UTC, date, datetime, timedelta

import schemathesis

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_SPAN = timedelta(days=400)
MAX_POINTS = 5000
SAFE = (datetime(2, 1, 1, tzinfo=UTC), datetime(9998, 1, 1, tzinfo=UTC))  # no offset overflows
RANGES = {
    "/api/v1/analytics/allocation/": ("from", "to"),
    "/api/v1/accounting/": ("since", "until"),
}


def _moment(raw) -> datetime | None:
    """A generated date or RFC 3339 time as an aware datetime (a date: its midnight, UTC)."""
    if not isinstance(raw, str):
        return None
    try:
        if len(raw) == 10:
            return datetime.combine(date.fromisoformat(raw), datetime.min.time(), tzinfo=UTC)
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _in_order(query: dict, low: str, high: str) -> None:
    """Make [query[low], query[high]) a range the API takes: both given, low first, within
    MAX_SPAN, each well inside the years datetime can hold in any offset."""
    start, end = _moment(query.get(low)), _moment(query.get(high))
    if low not in query and high not in query:
        return
    start = min(max(start or end or SAFE[0], SAFE[0]), SAFE[1])
    if end is None or not start < end <= start + MAX_SPAN:
        end = start + timedelta(days=1)
    query[low], query[high] = start.isoformat(), end.isoformat()


def _steps_fit(query: dict) -> None:
    """At most MAX_POINTS points: a `step` too fine for the range is made coarse enough."""
    step = query.get("step")
    if isinstance(step, str) and step.isascii() and step.isdigit():
        step = int(step)
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        return
    start, end = _moment(query.get("from")), _moment(query.get("to"))
    span = (end - start) if start and end else timedelta(hours=24)  # the default range
    least = -(-int(span.total_seconds()) // MAX_POINTS)  # ceiling
    query["step"] = max(step, least)


def _devices_exist(body: dict) -> None:
    """A node's failed devices are among its GPUs (0 to gpus - 1): those past them are left out
    (a PATCH that does not say how many GPUs: all of them)."""
    gpus = body.get("gpus")
    devices = body.get("failed_devices")
    if isinstance(devices, list):
        count = gpus if isinstance(gpus, int) and not isinstance(gpus, bool) else 0
        body["failed_devices"] = [d for d in devices if isinstance(d, int) and 0 <= d < count]


def _limit_above_quota(body: dict) -> None:
    """A project's (or a department's) GPU limit is at least its quota: a lower one becomes the
    quota (or no limit, null, in a PATCH that does not say the quota)."""
    limit, quota = body.get("limit"), body.get("quota")
    if "limit" not in body and isinstance(quota, int | float) and not isinstance(quota, bool):
        body["limit"] = None  # the queue's present limit may be under the new quota
        return
    if not isinstance(limit, int | float) or isinstance(limit, bool):
        return
    if not isinstance(quota, int | float) or isinstance(quota, bool):
        body["limit"] = None
    elif limit < quota:
        body["limit"] = quota


def _without_nul(value):
    """`value` without NUL characters in its texts and without the object keys that hold one,
    at any depth: the schema says no text may hold one (`--generation-allow-x00 false` keeps
    them out of most values, not out of keys nor out of objects nested in a list)."""
    if isinstance(value, dict):
        return {k: _without_nul(v) for k, v in value.items() if "\x00" not in k}
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, str):
        return value.replace("\x00", "")
    return value


def _environment_names(body: dict) -> None:
    """A job's environment names as its schema's `propertyNames` says (the generator does not
    always keep to it); a bulk submission's jobs likewise."""
    jobs = body["jobs"] if isinstance(body.get("jobs"), list) else [body]
    for job in jobs:
        environment = job.get("environment") if isinstance(job, dict) else None
        if isinstance(environment, dict):
            job["environment"] = {k: v for k, v in environment.items() if ENV_NAME.fullmatch(k)}


@schemathesis.hook
def map_case(context, case):
    """Put a positive case's range in order (see the module's docstring)."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return case
    if isinstance(case.body, dict | list):
        case.body = _without_nul(case.body)
    if case.operation.path.startswith("/api/v1/jobs/") and isinstance(case.body, dict):
        _environment_names(case.body)
    if (case.method.upper(), case.operation.path) == ("POST", "/api/v1/users/"):
        if isinstance(case.body, dict) and isinstance(case.body.get("password"), str):
            case.body = {**case.body, "password": f"Allot-{secrets.token_urlsafe(12)}"}
        return case
    if (case.method.upper(), case.operation.path) == ("POST", "/api/v1/auth/token/"):
        if isinstance(case.body, dict) and _moment(case.body.get("expires_in")) is not None:
            tomorrow = datetime.now(UTC) + timedelta(days=1)  # in the future, within 10 years
            case.body = {**case.body, "expires_in": tomorrow.isoformat()}
        return case
    if case.operation.path.startswith("/api/v1/nodes/") and isinstance(case.body, dict):
        _devices_exist(case.body)
        return case
    queues = ("/api/v1/projects/", "/api/v1/departments/")
    if case.operation.path.startswith(queues) and isinstance(case.body, dict):
        _limit_above_quota(case.body)
        return case
    bounds = RANGES.get(case.operation.path)
    if bounds is None:
        return case
    query = dict(case.query or {})
    _in_order(query, *bounds)
    if case.operation.path == "/api/v1/analytics/allocation/":
        _steps_fit(query)
    case.query = query
    return case
