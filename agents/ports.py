"""Free loopback ports for the processes Allot starts (local Jupyter servers) and its tests start.

A port the kernel hands out for `bind(("127.0.0.1", 0))` comes from the ephemeral range, the same
range it gives the local end of every outgoing connection. Between choosing such a port and the
child process binding it, any client on the machine may be given it for a connection, and the
child then fails with "address already in use" (the lab's JobSet manager did, in CI). A port below
that range is never handed to a connection, so only another listener can take it.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range for connections' local ports (Linux's default is 32768-60999)."""
    try:
        low, high = _RANGE_FILE.read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Whether a listener could bind `port` on `host` now."""
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port(host: str = "127.0.0.1") -> int:
    """A port free now on `host`, below the ephemeral range when that range leaves room (see the
    module's docstring); the kernel's own choice when 200 random tries find none free."""
    low, _ = ephemeral_range()
    floor = 10000 if low > 12000 else 1024
    for _ in range(200):
        port = random.randrange(floor, low)
        if port_is_free(port, host):
            return port
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]
