"""The origin notebooks are served on, apart from the portal's (issue 32 item 1).

A notebook server is the researcher's own code: whatever it answers - a page, a script, a
header - must never run on the portal's origin, where it would act with the session of whoever
opens it (a cluster admin opening a hostile `files/x.html` would make its author staff).
JupyterHub's answer is a separate origin for user servers (`subdomain_host`); Allot's is
`ALLOT_SESSIONS_ORIGIN`:

- `https://*.nb.example.org` (or `http://*.localhost:8000`, what `make run` uses: browsers send
  every `*.localhost` name to the loopback address) gives every session an origin of its own,
  `https://<key>.nb.example.org`, so one notebook's scripts cannot reach another's either;
- `https://nb.example.org` serves every session under its path on that one origin: the portal
  is safe, but sessions share an origin (a notebook's scripts can reach the sessions of whoever
  opens it); use it only where a wildcard name cannot be had.

Parsing only (the standard library): `portal.settings` checks the value with it at start, and
`portal.web.session_origin` serves with it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
HOST = re.compile(r"(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]*[a-z0-9])?")
KEY_LENGTH = 24  # hexadecimal characters of a session's key: 96 bits


class OriginError(ValueError):
    """The configured origin cannot be used; the text says why."""


@dataclass(frozen=True)
class SessionsOrigin:
    """Where sessions are served: a scheme, a host (`*.` first for an origin per session) and
    a port (None for the scheme's own)."""

    scheme: str
    host: str
    port: int | None

    @property
    def per_session(self) -> bool:
        """True when every session has a host (so an origin) of its own."""
        return self.host.startswith("*.")

    @property
    def suffix(self) -> str:
        """The part of a session's host after its key (`.nb.example.org`), or the one host."""
        return self.host[1:] if self.per_session else self.host

    @property
    def allowed_host(self) -> str:
        """This origin's entry for Django's ALLOWED_HOSTS (a leading dot covers subdomains)."""
        return self.suffix if self.per_session else self.host

    @property
    def source(self) -> str:
        """This origin as a Content-Security-Policy source (`http://*.localhost:8000`)."""
        port = f":{self.port}" if self.port else ""
        return f"{self.scheme}://{self.host}{port}"

    def host_for(self, key: str) -> str:
        """The host name of the session whose key is `key`."""
        return f"{key}{self.suffix}" if self.per_session else self.host

    def origin_for(self, key: str) -> str:
        """`scheme://host[:port]` of the session whose key is `key`."""
        port = f":{self.port}" if self.port and self.port != DEFAULT_PORTS[self.scheme] else ""
        return f"{self.scheme}://{self.host_for(key)}{port}"

    def key_of(self, host: str) -> str | None:
        """The session key a request's `Host` names, "" on the one shared host, None when the
        host is not this origin's (another host, or another port)."""
        name, _, port = host.lower().rpartition(":") if ":" in host else (host.lower(), "", "")
        wanted = self.port or DEFAULT_PORTS[self.scheme]
        if (int(port) if port.isdigit() else DEFAULT_PORTS[self.scheme]) != wanted:
            return None
        if not self.per_session:
            return "" if name == self.host else None
        key, dot, rest = name.partition(".")
        if dot and f".{rest}" == self.suffix and key and all(c in "0123456789abcdef" for c in key):
            return key
        return None


def session_key(job_id: int, project: str, name: str) -> str:
    """A DNS label unique to one job: a later job of the same name is another origin, so what
    a browser kept for the first (storage, cookies) is not the second's."""
    digest = hashlib.sha256(f"{job_id}:{project}/{name}".encode()).hexdigest()
    return digest[:KEY_LENGTH]


def parse(value: str) -> SessionsOrigin | None:
    """`ALLOT_SESSIONS_ORIGIN` read: None when empty; OriginError when it is not an origin."""
    value = value.strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in DEFAULT_PORTS:
        raise OriginError(f"{value!r} must start with http:// or https://")
    if parts.path not in ("", "/") or parts.query or parts.fragment or "@" in parts.netloc:
        raise OriginError(f"{value!r} must be an origin only: scheme, host and port")
    host, _, port = parts.netloc.lower().partition(":")
    if port and not port.isdigit():
        raise OriginError(f"{value!r} has a port that is not a number")
    if not HOST.fullmatch(host):
        raise OriginError(f"{value!r} needs a host name (a '*.' first for one per session)")
    return SessionsOrigin(parts.scheme, host, int(port) if port else None)
