"""Errors as JSON that names the field and the reason: `{"field": ["reason", ...]}`.

Request-wide problems use `detail` (DRF's convention); a malformed, too deep or too large body
is reported under `body` (Django's own RequestDataTooBig included: it used to be an HTML 400); a
lost race on a unique name is a 409 under that name (`portal.core.errors`).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import IntegrityError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from portal.api.parsers import too_big_message


def exception_handler(exc, context):
    """DRF's handler, plus malformed or oversized bodies under `body` and unique-constraint races
    as 409."""
    if isinstance(exc, exceptions.ParseError):
        return Response({"body": [str(exc.detail)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, RequestDataTooBig):
        message = too_big_message(settings.DATA_UPLOAD_MAX_MEMORY_SIZE)
        return Response({"body": [message]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError):
        return Response(
            {"detail": "The request conflicts with a concurrent change; retry it."},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
