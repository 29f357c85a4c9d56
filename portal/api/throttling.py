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
from rest_framework.throttling import ScopedRateThrottle

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
