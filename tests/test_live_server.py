"""The tests' live server (tests/live_server.py) answers a kept-alive connection without Nagle's
algorithm and serves it from one database connection, as the portal's own servers do."""

from __future__ import annotations

import http.client
import socket
import time
from urllib.parse import urlsplit

import pytest
from django.db import connection

from portal.tenancy.services import issue_token

pytestmark = pytest.mark.django_db(transaction=True)


def _others() -> set[int]:
    """The clients' backends on the test database other than this thread's (autovacuum's come
    and go)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
        )
        return {pid for (pid,) in cursor.fetchall()}


def _until(check, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if result := check():
            return result
        time.sleep(0.05)
    return None


class KeptAlive:
    """GETs of the API over one HTTP/1.1 connection, kept open, as the root persona."""

    def __init__(self, url: str, token: str):
        address = urlsplit(url)
        self.http = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
        self.token = token

    def get(self, path: str = "/api/v1/projects/") -> int:
        self.http.request("GET", path, headers={"Authorization": f"Token {self.token}"})
        answer = self.http.getresponse()
        answer.read()
        return answer.status


@pytest.fixture
def kept_alive(live_server, cluster_admin):
    client = KeptAlive(live_server.url, issue_token(cluster_admin, "keep-alive")[1])
    yield client
    client.http.close()


def test_the_servers_end_of_a_connection_has_nagle_off(live_server, kept_alive):
    assert kept_alive.get() == 200
    ours = kept_alive.http.sock.getsockname()
    (server_end,) = [s for s in live_server.thread.httpd.open_requests if s.getpeername() == ours]
    assert server_end.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


def test_requests_on_one_connection_share_one_database_connection(kept_alive):
    before = _others()
    assert kept_alive.get() == 200
    first = _until(lambda: _others() - before)
    assert first, "no database connection stayed open for the kept-alive one"
    for _ in range(3):
        assert kept_alive.get() == 200
    assert _others() - before == first  # not one per request, each closed after it
