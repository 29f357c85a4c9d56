"""The answer to a client django-axes has locked out of signing in (AXES_LOCKOUT_CALLABLE):
/login/ and /admin/login/ get a page that says so plainly, the API a JSON 429 (issue 22 item 3)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from portal.api.throttling import lockout_message, lockout_minutes


def locked_out(request: HttpRequest, *args, **kwargs) -> HttpResponse:
    """A 429 that says why and for how long (axes passes the response and the credentials,
    which say nothing more)."""
    if request.path.startswith("/api/"):
        response = JsonResponse({"detail": lockout_message()}, status=429)
    else:
        response = render(request, "registration/locked_out.html",
                          {"message": lockout_message()}, status=429)  # fmt: skip
    response["Retry-After"] = str(lockout_minutes() * 60)
    return response
