"""Issue 22: a notebook cannot open the portal's PostgreSQL or Redis (agents/firewall.py).

The sessions' users are real system users here, the connections real TCP connections, the
rules real iptables rules: a process of the sessions' group is refused, the same connection
from any other process goes through, and before the guard the group's process got through too
(so the refusals are the guard's doing).
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import socket
import subprocess
import uuid

import pytest

from agents import firewall

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="iptables and users of their own need root"),
    pytest.mark.skipif(shutil.which("iptables") is None, reason="iptables is not installed"),
]

PROBE = """
import socket, sys
try:
    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()
    print("connected")
except OSError as exc:
    print(type(exc).__name__)
"""


@pytest.fixture
def session_account():
    """A system user whose primary group is a group of its own for this test, as a session's
    user has the sessions' group; both gone afterwards."""
    name = f"allotfw{uuid.uuid4().hex[:8]}"
    admin = {"PATH": firewall.ADMIN_PATH}
    subprocess.run(["groupadd", "--system", name], check=True, env=admin)
    subprocess.run(["useradd", "--system", "--gid", name, "--no-create-home", "--shell",
                    "/usr/sbin/nologin", name], check=True, env=admin)  # fmt: skip
    yield pwd.getpwnam(name)
    firewall.remove()
    subprocess.run(["userdel", name], check=False, env=admin, capture_output=True)
    subprocess.run(["groupdel", name], check=False, env=admin, capture_output=True)


@pytest.fixture
def listener():
    """A TCP service on 127.0.0.1 that accepts anyone (as a trusting PostgreSQL would)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    yield server.getsockname()[1]
    server.close()


@pytest.fixture
def connect_as(session_python):
    """`connect_as(account, host, port)`: what a process of `account` gets when it connects,
    "connected" or the error's name."""

    def connect(account, host: str, port: int) -> str:
        return _connect(session_python, account, host, port)

    return connect


def _connect(python: str, account, host: str, port: int) -> str:
    done = subprocess.run(
        [python, "-I", "-S", "-c", PROBE, host, str(port)],
        user=account.pw_uid, group=account.pw_gid, extra_groups=[], env={}, cwd="/",
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout.strip() or done.stderr.strip()


def test_service_urls_give_the_hosts_and_ports_to_guard():
    assert firewall.services(
        "postgres://allot:pw@127.0.0.1:5432/allot",
        "postgresql://db/allot",
        "redis://:pw@localhost:6380/0",
        "rediss://cache.example",
        "sqlite:///var/allot.sqlite3",
        "memory://",
        "",
        "postgres://allot@%2Fvar%2Frun%2Fpostgresql/allot",
    ) == [("127.0.0.1", 5432), ("cache.example", 6379), ("db", 5432), ("localhost", 6380)]


def test_a_service_on_this_host_is_guarded_on_every_address_one_elsewhere_on_its_own():
    here = firewall.rules([("127.0.0.1", 5432)], gid=999)
    assert here["4"] == [["-p", "tcp", "--dport", "5432", "-m", "owner", "--gid-owner", "999",
                          "-j", "REJECT", "--reject-with", "tcp-reset"]]  # fmt: skip
    elsewhere = firewall.rules([("192.0.2.7", 6379)], gid=999)  # TEST-NET-1: not this host
    assert elsewhere["4"] == [["-p", "tcp", "-d", "192.0.2.7", "--dport", "6379", "-m", "owner",
                               "--gid-owner", "999", "-j", "REJECT", "--reject-with",
                               "tcp-reset"]]  # fmt: skip
    assert elsewhere["6"] == []


def test_the_sessions_group_is_refused_and_nobody_else_is(session_account, listener, connect_as):
    assert connect_as(session_account, "127.0.0.1", listener) == "connected"  # before: open
    firewall.guard([("127.0.0.1", listener)], session_account.pw_gid)
    assert connect_as(session_account, "127.0.0.1", listener) == "ConnectionRefusedError"
    # another address of the loopback network reaches a service on 0.0.0.0 too: guarded
    assert connect_as(session_account, "127.0.0.2", listener) == "ConnectionRefusedError"
    # the portal (this process) still connects, and so does any user not in the group
    socket.create_connection(("127.0.0.1", listener), timeout=3).close()
    nobody = pwd.getpwnam("nobody")
    assert connect_as(nobody, "127.0.0.1", listener) == "connected"
    # a second guard replaces the chain's rules instead of adding to them
    firewall.guard([("127.0.0.1", listener)], session_account.pw_gid)
    listed = subprocess.run(["iptables", "-S", firewall.CHAIN], capture_output=True, text=True)
    assert listed.stdout.count("--dport") == 1, listed.stdout
    firewall.remove()
    assert connect_as(session_account, "127.0.0.1", listener) == "connected"


def test_the_portals_postgresql_and_redis_are_out_of_reach(session_account, connect_as):
    """The services the test suite itself runs on (trusting local connections, as .ci/run
    configures PostgreSQL) are the ones a notebook would go for."""
    targets = firewall.services(
        os.environ.get("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/allot"),
        os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"),
    )
    reachable = {port: connect_as(session_account, host, port) for host, port in targets}
    if set(reachable.values()) != {"connected"}:
        pytest.skip(f"PostgreSQL and Redis are not both running here: {reachable}")
    firewall.guard(targets, session_account.pw_gid)
    for host, port in targets:
        assert connect_as(session_account, host, port) == "ConnectionRefusedError", (host, port)
    assert grp.getgrgid(session_account.pw_gid).gr_name == session_account.pw_name
