"""Who is acting: the current request, kept in a context variable by a middleware, so that
`portal.audit.services.record` finds the actor and the address without every service taking
them as arguments.

The request itself is kept, not its user: DRF authenticates a token after the middlewares ran
and sets `request.user` then, so the user is read when an entry is recorded. Outside a request
(Celery tasks, management commands, the embedded cycle's thread) there is none, and entries are
the system's.
"""

from __future__ import annotations

from contextvars import ContextVar

from portal.core.addresses import client_address

_request: ContextVar = ContextVar("allot_audit_request", default=None)


def current_request():
    """The request being served in this context, or None."""
    return _request.get()


def actor_of(request) -> tuple[object | None, str | None]:
    """(the signed-in user or None, the client's address) of `request`."""
    user = getattr(request, "user", None)
    if not (user is not None and user.is_authenticated):
        user = None
    return user, client_address(request)


class AuditContextMiddleware:
    """Keeps the request in the context while it is served (after AuthenticationMiddleware)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = _request.set(request)
        try:
            return self.get_response(request)
        finally:
            _request.reset(token)
