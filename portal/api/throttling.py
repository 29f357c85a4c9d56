"""Who is signing in: the client's real address, and what a locked-out client is told.

One rule (`portal.core.addresses.client_address`) finds the address for every door - DRF's
throttles (NUM_PROXIES), django-axes' lockouts (AXES_CLIENT_IP_CALLABLE) and the audit log - from
one setting, ALLOT_TRUSTED_PROXIES: the number of reverse proxies in front of the portal that
append the address they saw to X-Forwarded-For. 0 (the default) ignores the header: the address
is the socket's peer, REMOTE_ADDR. Before issue 22 (item 3) the login throttle keyed on the
header as sent, so a new value each try was never throttled.
"""

from __future__ import annotations

from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

from portal.core.addresses import client_address


class LoginThrottle(ScopedRateThrottle):
    """ALLOT_LOGIN_RATE password logins per client address, however the header is set."""

    def get_ident(self, request) -> str | None:
        return client_address(request)


def lockout_minutes() -> int:
    """How long signing in stays locked after too many failures (ALLOT_LOGIN_LOCKOUT_MIN)."""
    return round(settings.AXES_COOLOFF_TIME.total_seconds() / 60)


def lockout_message() -> str:
    """What a locked-out client is told, by the API (429) and the sign-in pages alike."""
    return (
        "Too many failed sign-ins for this account or from this address: signing in is locked "
        f"for {lockout_minutes()} minutes. A cluster admin can unlock it sooner."
    )


class SubmitThrottle(SimpleRateThrottle):
    """ALLOT_SUBMIT_RATE jobs per user (issue 32 item 8): a bulk request counts each of its
    jobs, so a sweep is no way around it. Past it, a 429 with Retry-After that names the limit
    (`SubmitLimited.throttled`).

    The window's history is kept as one sum per `BUCKETS`th of the period, each stamped with
    its latest submission (issue 39): one entry per request, read, filtered and written back
    at every submission, made the throttle a sixth of a submission's CPU at 4,000 a minute. A
    sum leaves the window when its latest submission does, so the limit is never looser, and
    Retry-After at most a bucket's width (a 120th of the period) longer."""

    BUCKETS = 120

    scope = "submit"

    def get_rate(self) -> str | None:
        return settings.ALLOT_SUBMIT_RATE or None  # read each time: a setting like any other

    def get_cache_key(self, request, view) -> str | None:
        if not request.user.is_authenticated:
            return None
        return self.cache_format % {"scope": self.scope, "ident": request.user.pk}

    def allow_request(self, request, view) -> bool:
        if self.rate is None or request.method != "POST":
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        self.history = [(at, n) for at, n in self.cache.get(self.key, [])
                        if at > self.now - self.duration]  # fmt: skip
        wanted = jobs_in(request)
        if sum(n for _, n in self.history) + wanted > self.num_requests:
            return self.throttle_failure()
        width = self.duration / self.BUCKETS
        if self.history and self.history[0][0] // width == self.now // width:
            self.history[0] = (self.now, self.history[0][1] + wanted)  # the newest bucket's
        else:
            self.history.insert(0, (self.now, wanted))
        self.cache.set(self.key, self.history, self.duration)
        return True

    def wait(self) -> float | None:
        if not self.history:
            return self.duration
        return max(0.0, self.history[-1][0] + self.duration - self.now)


def jobs_in(request) -> int:
    """How many jobs a submission asks for: a bulk's list, else one (a list longer than a bulk
    may be is refused by its validation, a 400 that says so, and counts one)."""
    from portal.api.serializers.jobs import BULK_MAX

    data = request.data if isinstance(request.data, dict) else {}
    jobs = data.get("jobs")
    return len(jobs) if isinstance(jobs, list) and 0 < len(jobs) <= BULK_MAX else 1


class SubmitLimited:
    """A view that submits jobs: SubmitThrottle on POST, and a 429 that says which limit."""

    throttle_classes = [SubmitThrottle]

    def throttled(self, request, wait) -> None:
        raise Throttled(wait, detail=(
            f"too many jobs submitted: at most {settings.ALLOT_SUBMIT_RATE} per user "
            f"(ALLOT_SUBMIT_RATE); this request asks for {jobs_in(request)}"))  # fmt: skip
