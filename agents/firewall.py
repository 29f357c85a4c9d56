"""Keeps researchers' notebooks off the portal's own services (issue 22).

Local Jupyter sessions run as system users of their own, all in one group (`GROUP`), on the
portal's host (`agents.sessions`). File modes keep them out of the portal's files, a clean
environment keeps its secrets from them; but PostgreSQL and Redis listen on the same host and
commonly trust local connections (`trust` on 127.0.0.1 in pg_hba.conf, a Redis with no
password), so a notebook could open the portal's database or its Celery broker directly.

`guard` installs an iptables chain, `ALLOT-SESSIONS`, jumped to from OUTPUT, that rejects every
TCP connection a process of that group opens to those services: the service's port on any
address of this host (a service on 0.0.0.0 answers on all of them) or on the service's own
address when it lives elsewhere. The rules match the socket's owner group (`-m owner
--gid-owner`), so nothing else on the host is touched, and the chain is replaced as a whole,
so a restart of the portal leaves no stale rule. IPv6 rules go through ip6tables the same way.
"""

from __future__ import annotations

import ipaddress
import shutil
import socket
import subprocess
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

GROUP = "allot-sessions"  # every session's user has it as its primary group
CHAIN = "ALLOT-SESSIONS"
ADMIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin"  # the admin tools (sessions too)
DEFAULT_PORTS = {"postgres": 5432, "postgresql": 5432, "redis": 6379, "rediss": 6379}


class FirewallError(RuntimeError):
    """The chain could not be installed; the message says why and what to do."""


def services(*urls: str) -> list[tuple[str, int]]:
    """(host, port) of each service URL (`postgres://…@db:5432/allot`, `redis://…:6379/0`);
    URLs with no network address (sqlite, memory, unix sockets) give nothing."""
    found = []
    for url in urls:
        if not url:
            continue
        parts = urlsplit(url)
        scheme = parts.scheme.split("+")[0]
        if scheme not in DEFAULT_PORTS:
            continue
        host = unquote(parts.hostname or "localhost")
        if host.startswith("/"):  # a unix socket directory: no TCP to guard
            continue
        try:
            port = parts.port or DEFAULT_PORTS[scheme]
        except ValueError:
            continue
        found.append((host, port))
    return sorted(set(found))


def rules(targets: Iterable[tuple[str, int]], gid: int) -> dict[str, list[list[str]]]:
    """The chain's rules per family ("4", "6"): for a service on this host its port on every
    destination, for one elsewhere its port on its own addresses."""
    by_family: dict[str, list[list[str]]] = {"4": [], "6": []}
    owner = ["-m", "owner", "--gid-owner", str(gid)]
    reject = ["-j", "REJECT", "--reject-with", "tcp-reset"]
    for host, port in targets:
        addresses = _addresses(host)
        local = not addresses or any(_is_local(address) for address in addresses)
        for family in ("4", "6"):
            wanted = [[]] if local else [["-d", a] for a in addresses if _family(a) == family]
            for destination in wanted:
                rule = ["-p", "tcp", *destination, "--dport", str(port), *owner, *reject]
                if rule not in by_family[family]:
                    by_family[family].append(rule)
    return by_family


def guard(targets: Iterable[tuple[str, int]], gid: int) -> dict[str, list[list[str]]]:
    """Install `CHAIN` with `rules(targets, gid)` (replacing what it held) and its jump from
    OUTPUT; the rules installed. FirewallError when iptables is missing or refuses."""
    wanted = rules(targets, gid)
    for family, chain_rules in wanted.items():
        tool = _tool(family)
        if tool is None:
            if family == "6" and not chain_rules:
                continue
            raise FirewallError(
                "iptables is not installed, so notebooks could reach PostgreSQL and Redis on "
                "this host: install it (apt-get install iptables), or set "
                "ALLOT_SESSIONS_FIREWALL=0 if those services ask for passwords notebooks cannot "
                "know"
            )
        if _run(tool, "-n", "-L", CHAIN, check=False).returncode != 0:
            _run(tool, "-N", CHAIN)
        _run(tool, "-F", CHAIN)
        for rule in chain_rules:
            _run(tool, "-A", CHAIN, *rule)
        if _run(tool, "-C", "OUTPUT", "-j", CHAIN, check=False).returncode != 0:
            _run(tool, "-I", "OUTPUT", "1", "-j", CHAIN)
    return wanted


def remove() -> None:
    """Take the chain and its jump away (tests, and an operator turning the guard off)."""
    for family in ("4", "6"):
        tool = _tool(family)
        if tool is None:
            continue
        while _run(tool, "-C", "OUTPUT", "-j", CHAIN, check=False).returncode == 0:
            _run(tool, "-D", "OUTPUT", "-j", CHAIN)
        if _run(tool, "-n", "-L", CHAIN, check=False).returncode == 0:
            _run(tool, "-F", CHAIN)
            _run(tool, "-X", CHAIN)


def _tool(family: str) -> str | None:
    return shutil.which("iptables" if family == "4" else "ip6tables", path=ADMIN_PATH)


def _run(tool: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    command = [tool, "-w", "5", *args]  # -w: wait for another process's xtables lock
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=30,
                              env={"PATH": ADMIN_PATH})  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise FirewallError(f"{' '.join(command)} could not run: {exc}") from exc
    if check and done.returncode != 0:
        why = done.stderr.strip() or f"exit {done.returncode}"
        raise FirewallError(
            f"{' '.join(command)} failed ({why}): the portal needs root with CAP_NET_ADMIN to "
            "keep notebooks off PostgreSQL and Redis, or ALLOT_SESSIONS_FIREWALL=0 if those "
            "services ask for passwords notebooks cannot know"
        )
    return done


def _addresses(host: str) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return []
    return sorted({info[4][0] for info in infos})


def _family(address: str) -> str:
    return "6" if ipaddress.ip_address(address).version == 6 else "4"


def _is_local(address: str) -> bool:
    """A loopback address, or one of this host's own: a service there answers on every
    address a listener on 0.0.0.0 has, so its port is guarded on all of them."""
    ip = ipaddress.ip_address(address)
    if ip.is_loopback or ip.is_unspecified:
        return True
    try:
        with socket.socket(socket.AF_INET6 if ip.version == 6 else socket.AF_INET) as probe:
            probe.bind((address, 0))  # only an address of this host can be bound
        return True
    except OSError:
        return False
