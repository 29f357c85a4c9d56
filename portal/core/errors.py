"""Errors a service raises that the API shows as they are: a 409 naming the field and the reason.

The services (`portal/*/services.py`) sit below the REST layer but decide what clashes with
what is stored, so the one error class they share lives here, beneath every app.
"""

from __future__ import annotations

from rest_framework import exceptions, status


class Conflict(exceptions.APIException):
    """409: the request clashes with what is stored (a duplicate name, a node in use)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


def conflict(field: str, reason: str) -> Conflict:
    """A 409 whose body names `field` and `reason`."""
    return Conflict({field: [reason]})
