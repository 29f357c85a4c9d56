"""The client's real address, found one way for every door (issue 22 item 3).

DRF's throttles (NUM_PROXIES), django-axes' lockouts (AXES_CLIENT_IP_CALLABLE) and the audit log
all read it from one setting, ALLOT_TRUSTED_PROXIES: the number of reverse proxies in front of
the portal that append the address they saw to X-Forwarded-For. 0 (the default) ignores the
header: the address is the socket's peer, REMOTE_ADDR. It lives beneath every app so that the
audit log, which the services call, can use it too.
"""

from __future__ import annotations

import ipaddress

from rest_framework.throttling import BaseThrottle


def client_address(request) -> str | None:
    """The client's address: X-Forwarded-For's entry written by the outermost trusted proxy
    (DRF's rule under NUM_PROXIES), REMOTE_ADDR without trusted proxies, or REMOTE_ADDR when the
    header holds no address there (a proxy that forwards without appending)."""
    address = BaseThrottle().get_ident(request)
    try:
        ipaddress.ip_address(address or "")
    except ValueError:
        return request.META.get("REMOTE_ADDR")
    return address
