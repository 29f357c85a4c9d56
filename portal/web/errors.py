"""The portal's error pages (400, 403, 404, 500 and a refused CSRF check) in its own layout, each
with a way back, and plain JSON under /api/ where clients expect it.

Django uses these only when DEBUG is off, which is how `make run` serves users; `make run
DEBUG=1` is the developer's switch back to Django's debug pages. The 500 page is rendered without
the request (no session, no database), so it shows even when those are what failed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string

TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Page not found",
    500: "Something went wrong",
}
EXPLANATIONS = {
    400: "The portal could not read this request.",
    403: "Your account may not open this page or do this here.",
    404: "There is no page here, or it belongs to a project you are not a member of.",
    500: "The portal failed to answer. The error is in the server's log; try again in a "
    "moment, and tell your cluster admin if it keeps happening.",
}


def _message(exception) -> str:
    """The reason our code gave (Http404("Job a/b not found."), PermissionDenied("Only ...")),
    never the resolver's internals."""
    args = getattr(exception, "args", ())
    return args[0] if args and isinstance(args[0], str) else ""


def _back(request: HttpRequest) -> str | None:
    """The page the user came from, when it is one of the portal's own."""
    referer = request.headers.get("Referer", "")
    parts = urlsplit(referer)
    try:
        host = request.get_host()
    except DisallowedHost:  # the 400 of a request for a host this portal is not
        return None
    return referer if parts.netloc == host and parts.path != request.path else None


def _page(request: HttpRequest | None, status: int, message: str = "") -> HttpResponse:
    if request is not None and request.path.startswith("/api/"):
        return JsonResponse({"detail": message or TITLES[status]}, status=status)
    back = _back(request) if request is not None else None
    context = {"status": status, "title": TITLES[status], "explanation": EXPLANATIONS[status],
               "message": message, "back": back}  # fmt: skip
    return HttpResponse(render_to_string("web/error.html", context, request), status=status)


def bad_request(request: HttpRequest, exception=None) -> HttpResponse:
    return _page(request, 400)


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    return _page(request, 403, _message(exception))


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    return _page(request, 404, _message(exception))


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": TITLES[500]}, status=500)
    return _page(None, 500)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """A form posted from a stale page or another site (CSRF_FAILURE_VIEW)."""
    return _page(request, 403, "The form was too old or did not come from this portal: "
                 "reload the page and send it again.")  # fmt: skip
