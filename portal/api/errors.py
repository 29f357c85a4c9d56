"""Errors as JSON that names the field and the reason: `{"field": ["reason", ...]}`.

Request-wide problems use `detail` (DRF's convention); a malformed body is reported under
`body`; a lost race on a unique name is a 409 under that name (`portal.core.errors`).
"""

from __future__ import annotations

from django.db import IntegrityError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    """DRF's handler, plus malformed JSON under `body` and unique-constraint races as 409."""
    if isinstance(exc, exceptions.ParseError):
        return Response({"body": [str(exc.detail)]}, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, IntegrityError):
        return Response(
            {"detail": "The request conflicts with a concurrent change; retry it."},
            status=status.HTTP_409_CONFLICT,
        )
    return drf_exception_handler(exc, context)
