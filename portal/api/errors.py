"""Errors as JSON that names the field and the reason: `{"field": ["reason", ...]}`.

Request-wide problems use `detail` (DRF's convention); a malformed, too deep or too large body
is reported under `body` (Django's own RequestDataTooBig included: it used to be an HTML 400); a
lost race on a unique name is a 409 under that name (`portal.core.errors`). PostgreSQL or Redis
away for a moment (a restart) is a 503 with Retry-After naming it, not a 500: the request
changed nothing it could not roll back, and the client may send it again. A request that is
well formed but names an object that does not exist (every reason's code `does_not_exist`) is a
404 naming the field.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError, InterfaceError, OperationalError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from portal.api.parsers import too_big_message


def exception_handler(exc, context):
    """DRF's handler, plus malformed or oversized bodies under `body` and unique-constraint races
    as 409."""
    if isinstance(exc, exceptions.ParseError):
        return Response({"body": [str(exc.detail)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        message = too_big_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return Response({"body": [message]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ValidationError) and _only_missing(exc.detail):
        # well formed, but names no object there is (a member's username, a rule's project): a
        # 404 naming the field, as for an object named in the path
        return Response(exc.detail, status=status.HTTP_404_NOT_FOUND)
    if unavailable := _unavailable(exc):
        set_rollback()  # under ATOMIC_REQUESTS, nothing of the request is committed
        return Response(
            {"detail": f"The {unavailable} is not answering for the moment; retry shortly."},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": str(RETRY_AFTER_S)},
        )
    if isinstance(exc, IntegrityError):
        return Response(
            {"detail": "The request conflicts with a concurrent change; retry it."},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)


RETRY_AFTER_S = 5  # a restarted PostgreSQL or Redis answers again within seconds (issue 40)


def _unavailable(exc) -> str | None:
    """Which backing service `exc` says is away: the database (a connection lost or refused),
    Redis (the cache behind the throttles, the channel layer), or None."""
    if isinstance(exc, OperationalError | InterfaceError):
        return "database"
    try:
        import redis
    except ImportError:  # the embedded default runs without it
        return None
    if isinstance(exc, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
        return "Redis server"
    return None


MISSING = "does_not_exist"  # DRF's code for a related object not found; ours for the same


def _only_missing(detail) -> bool:
    """Whether every reason in a ValidationError's detail says an object named does not exist."""
    leaves, stack = [], [detail]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        else:
            leaves.append(getattr(item, "code", None))
    return bool(leaves) and all(code == MISSING for code in leaves)
