"""The `live_server` the tests use: pytest-django's, with two costs of Django's test server taken
out that a deployed portal does not have (measured on the schema conformance run: 87 ms a
request, of which some 50 ms waiting and 15 ms connecting to PostgreSQL).

- Nagle's algorithm: the server writes the status line and the headers of each answer in two
  sends, and the client acknowledges the first only after its delayed-ACK timer (40 ms on
  Linux), so every answer on a kept-alive connection waited about 40 ms
  (https://github.com/python/cpython/issues/108736). Uvicorn and gunicorn set TCP_NODELAY.
- A new database connection per request: every thread of the threaded server connected to
  PostgreSQL for each request and closed after it (CONN_MAX_AGE is 0 in the tests), where the
  portal's workers borrow one from their pool (settings `DB_POOL`). Here a thread keeps its
  connection while its client keeps the HTTP connection: Django still closes one that failed
  or was left in a transaction after each request (`close_old_connections`), and every one
  when its HTTP connection ends. At the end the server closes the kept-alive connections and
  waits for their threads, so no database connection outlives it (the test database is then
  dropped, which an open connection would refuse).
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time

import pytest

STOP_WAIT_S = 30  # for the threads of the kept-alive connections to close theirs


def _server_class():
    from django.core.servers.basehttp import ThreadedWSGIServer
    from django.db import connections
    from django.test.testcases import QuietWSGIRequestHandler

    class KeptAliveHandler(QuietWSGIRequestHandler):
        disable_nagle_algorithm = True  # socketserver sets TCP_NODELAY on the connection

        def setup(self):
            super().setup()
            for connection in connections.all():  # this thread's own, not yet connected
                connection.settings_dict = {**connection.settings_dict, "CONN_MAX_AGE": None}

    class KeptAliveServer(ThreadedWSGIServer):
        def __init__(self, address, handler, *args, **kwargs):
            super().__init__(address, KeptAliveHandler, *args, **kwargs)
            self.open_requests: set[socket.socket] = set()
            self.lock = threading.Lock()

        def process_request_thread(self, request, client_address):
            with self.lock:
                self.open_requests.add(request)
            try:
                super().process_request_thread(request, client_address)
            finally:  # its database connections were closed by close_request
                with self.lock:
                    self.open_requests.discard(request)

        def server_close(self):
            super().server_close()
            with self.lock:
                for request in self.open_requests:  # the thread reads EOF and ends
                    with contextlib.suppress(OSError):  # already closed by the client
                        request.shutdown(socket.SHUT_RDWR)
            deadline = time.monotonic() + STOP_WAIT_S
            while self.open_requests and time.monotonic() < deadline:
                time.sleep(0.05)

    return KeptAliveServer


@pytest.fixture(scope="session")
def live_server(request):
    """pytest-django's live server (same address options), serving as described above."""
    from pytest_django.live_server_helper import LiveServer

    addr = (
        request.config.getvalue("liveserver")
        or os.getenv("DJANGO_LIVE_TEST_SERVER_ADDRESS")
        or "localhost"
    )
    server = LiveServer(addr, start=False)
    server.thread.server_class = _server_class()
    server.start()
    yield server
    server.stop()
