"""Where a webhook may send: public addresses only, unless a cluster admin allows a network.

A project admin chooses a webhook's URL, and the portal (inside the cluster's network) makes the
request: without a guard that is a way to reach loopback services, the cloud's metadata endpoint
or anything on the private network. So a URL's host is resolved once, every address it resolves
to is checked, and the request goes to the checked address (the host name only in the `Host`
header and TLS's SNI), so a DNS answer that changes between the check and the connection
(rebinding) cannot switch it. The check runs when a webhook is saved (a 400 saying why) and again
before every delivery. `ALLOT_WEBHOOK_ALLOWED_NETWORKS` (CIDRs) lets e.g. an internal receiver in.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
SETTING = "ALLOT_WEBHOOK_ALLOWED_NETWORKS"
# Cloud metadata services (AWS, GCP, Azure, OpenStack; AWS's IPv6 one) — named apart for the reason
METADATA = {ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")}
_KINDS = (  # the first that fits names the refusal
    ("is_unspecified", "an unspecified address"),
    ("is_loopback", "a loopback address"),
    ("is_link_local", "a link-local address"),
    ("is_multicast", "a multicast address"),
    ("is_private", "a private address"),
    ("is_reserved", "a reserved address"),
)


class TargetRefused(ValueError):
    """The URL may not be a webhook's: the message says why, for the person who typed it."""


class Unresolved(TargetRefused):
    """The URL's host name does not resolve (now)."""


@dataclass(frozen=True)
class Target:
    """A checked destination: connect to `address`, name `host` in Host and SNI."""

    scheme: str
    host: str
    port: int
    address: Address


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (tests replace this to play DNS)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return [ipaddress.ip_network(cidr, strict=False) for cidr in getattr(settings, SETTING, [])]


def refusal(address: Address) -> str | None:
    """Why a webhook may not reach `address` ("a loopback address"), None when it may."""
    if any(address in network for network in allowed_networks()):
        return None
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        return refusal(embedded)
    if address in METADATA:
        return "a cloud metadata address"
    for attribute, kind in _KINDS:
        if getattr(address, attribute):
            return kind
    return None if address.is_global else "a non-public address"


def _embedded_ipv4(address: Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address inside an IPv4-mapped, 6to4 or NAT64 IPv6 one (the one connected to)."""
    if address.version != 6:
        return None
    if address.ipv4_mapped or address.sixtofour:
        return address.ipv4_mapped or address.sixtofour
    if address in ipaddress.ip_network("64:ff9b::/96"):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def check(url: str) -> Target:
    """The checked destination of `url`; raises TargetRefused (or Unresolved) saying why."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TargetRefused("Webhooks use http:// or https:// URLs with a host.")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise TargetRefused("The URL's port is not a number from 1 to 65535.") from None
    try:
        addresses = [ipaddress.ip_address(text.split("%")[0])
                     for text in resolve(parts.hostname, port)]  # fmt: skip
    except (OSError, UnicodeError, ValueError):
        raise Unresolved(f"{parts.hostname} does not resolve to an address.") from None
    if not addresses:
        raise Unresolved(f"{parts.hostname} does not resolve to an address.")
    for address in addresses:  # every answer: a mix of public and private ones is refused
        kind = refusal(address)
        if kind is not None:
            named = "The URL" if parts.hostname == str(address) else parts.hostname
            raise TargetRefused(
                f"{named} resolves to {address}, {kind}; webhooks may only reach public "
                f"addresses ({SETTING})"
            )
    return Target(parts.scheme, parts.hostname, port, addresses[0])


def check_new(url: str) -> None:
    """The check when a webhook is saved: a name that does not resolve yet is let through (it is
    checked again before every delivery); an address that may not be reached is refused."""
    with contextlib.suppress(Unresolved):
        check(url)
