"""Issue 24 items 4 and 9: `make run PORT=8123` serves on that port; the first run ends its set-up
with the admin's sign-in line, a second one with how to set a lost password; users get the
portal's 404 page, and DEBUG=1 is the developer's switch back to Django's debug pages.

Each run has its own SQLite file, static files and sessions directory (the Makefile passes the
environment on); `-o .venv/.installed` keeps make from reinstalling the virtualenv.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

import pytest

from agents.ports import free_port
from tests.paths import ROOT

pytestmark = pytest.mark.slow


def _port() -> int:
    """8123 as the issue says, unless something else holds it."""
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", 8123))
        except OSError:
            return free_port()
        return sock.getsockname()[1]


class MakeRun:
    def __init__(self, tmp_path, port: int, *extra: str):
        self.log = tmp_path / f"make-run-{time.monotonic_ns()}.log"
        env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp_path / 'allot.sqlite3'}",
                   STATIC_ROOT=str(tmp_path / "static"), ALLOT_SIM_JUPYTER="0",
                   ALLOT_SESSIONS_DIR=str(tmp_path / "sessions"))  # fmt: skip
        for name in ("DEBUG", "REDIS_URL", "SECRET_KEY", "ALLOWED_HOSTS", "PORT", "HOST"):
            env.pop(name, None)
        with open(self.log, "w") as out:
            self.process = subprocess.Popen(
                ["make", "-o", ".venv/.installed", "run", f"PORT={port}", *extra], cwd=ROOT,
                env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.url = f"http://127.0.0.1:{port}"

    def wait(self) -> None:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(self.url + "/healthz/", timeout=2)
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"make run did not serve {self.url}:\n{self.output()}")
                time.sleep(0.5)

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.url + path, timeout=10) as answer:
                return answer.status, answer.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def output(self) -> str:
        return self.log.read_text()

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)  # make and the server it started
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


def _set_up(output: str) -> list[str]:
    """The lines before the server's own start-up banner."""
    return output.split("Performing system checks")[0].strip().splitlines()


def test_make_run_serves_on_port_and_says_how_to_sign_in_each_time(tmp_path):
    port = _port()
    first = MakeRun(tmp_path, port)
    try:
        first.wait()
        status, page = first.get("/no-such-page/")
        assert status == 404
        assert "Page not found" in page and "URLconf" not in page  # the portal's, not Django's
        assert first.get("/login/")[0] == 200
    finally:
        first.stop()
    last = _set_up(first.output())[-1]
    assert last.startswith(f"Sign in at http://127.0.0.1:{port}/ as admin with the password ")
    assert first.output().count("Sign in at") == 1

    second = MakeRun(tmp_path, port, "DEBUG=1")
    try:
        second.wait()
        status, page = second.get("/no-such-page/")
        assert status == 404 and "URLconf" in page  # the developer's switch
    finally:
        second.stop()
    lines = _set_up(second.output())
    assert "Users exist already; no admin created." in lines
    recovery = "Lost the password? Set a new one with: .venv/bin/python manage.py changepassword"
    assert lines[-1] == f"Sign in at http://127.0.0.1:{port}/ as admin. {recovery} admin"
