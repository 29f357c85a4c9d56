"""Browser tests: a real portal (daphne, websockets, the embedded cycle) on the test database,
driven by Playwright through Debian's Chromium. Screenshots go to `var/test-artifacts/` (or
`$ALLOT_TEST_ARTIFACTS`); look at them.

Chromium comes from `apt-get install chromium` (never `playwright install`). Without it these
tests are skipped with a reason, except when ALLOT_REQUIRE_BROWSER=1 (CI sets it): then they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agents.ports import free_port
from agents.sessions import LocalSessions
from tests.portal.scheduling.test_concurrency import _test_database_url

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
PASSWORD = "x-test-password-1"  # the personas' password (tests/conftest.py)


class Server:
    """A daphne process serving the portal on `port`; it can be stopped and started again."""

    def __init__(self, port: int, env: dict, log: Path):
        self.port, self.env, self.log = port, env, log
        self.url = f"http://127.0.0.1:{port}"
        self.netloc = urlsplit(self.url).netloc
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        with open(self.log, "a") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port),
                 "portal.asgi:application"],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/healthz/", timeout=2)
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.process.kill()
                    pytest.fail(f"daphne did not start:\n{self.log.read_text()}")
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def server(transactional_db, tmp_path, settings, request, sessions_dir, session_python):
    """The portal as `make run` serves it, with a fast cycle, on the test database, its
    notebooks on their own origins (http://<key>.localhost:<port>). Tests marked `jupyter` get
    real JupyterLab sessions (in `sessions_dir`, which this process reads
    too, run by `session_python`: as root each session's own user must reach both); they are
    all stopped at the end. `eta_interval(s)` sets ALLOT_ETA_INTERVAL_S."""
    settings.ALLOT_SESSIONS_DIR = sessions_dir
    jupyter = request.node.get_closest_marker("jupyter") is not None
    eta = request.node.get_closest_marker("eta_interval")
    port = free_port()
    env = dict(
        os.environ, DATABASE_URL=_test_database_url(), PYTHONPATH=str(ROOT), DEBUG="1",
        ALLOT_SESSIONS_ORIGIN=f"http://*.localhost:{port}",
        ALLOT_PORTAL_URL=f"http://127.0.0.1:{port}",
        ALLOT_EMBEDDED_CYCLE="1", ALLOT_CYCLE_INTERVAL_S="0.5", ALLOT_SIM_START_DELAY_S="0",
        ALLOT_USAGE_SAMPLE_INTERVAL_S="1", ALLOT_SIM_JUPYTER="1" if jupyter else "0",
        ALLOT_SESSIONS_DIR=str(sessions_dir), ALLOT_SESSIONS_PYTHON=session_python,
        ALLOT_NOTIFICATIONS="1",
    )  # fmt: skip
    if eta is not None:
        env["ALLOT_ETA_INTERVAL_S"] = str(eta.args[0])
    env |= getattr(request.module, "SERVER_ENV", {})
    if env["DEBUG"] == "0":  # no finders then: WhiteNoise serves what collectstatic gathered
        env["STATIC_ROOT"] = str(request.getfixturevalue("collected_static"))
    env.pop("REDIS_URL", None)
    # The server is strict about async code as in production: the test process relaxes the
    # check for its own ORM calls beside Playwright's loop (`chromium`), and a server that
    # inherited that hid an audit CSV that never answered under ASGI (issue 32 item 6).
    env.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    server = Server(port, env, tmp_path / "daphne.log")
    server.start()
    yield server
    server.stop()
    sessions = LocalSessions(sessions_dir)
    for session in sessions.all():  # like pods, sessions outlive the web process: end them
        sessions.stop(session.project, session.name)


# A test module's SERVER_ENV = USER_MODE serves the portal as `make run` serves users: DEBUG off
# (the portal's own error pages) over plain HTTP.
USER_MODE = {
    "DEBUG": "0", "SECRET_KEY": "browser-tests-" + "x" * 40, "SECURE_SSL_REDIRECT": "0",
    "SESSION_COOKIE_SECURE": "0", "CSRF_COOKIE_SECURE": "0", "SECURE_HSTS_SECONDS": "0",
}  # fmt: skip


@pytest.fixture(scope="session")
def collected_static(tmp_path_factory) -> Path:
    """The static files gathered once, as `make run` does, for a portal with DEBUG off."""
    root = tmp_path_factory.mktemp("static")
    env = dict(os.environ, STATIC_ROOT=str(root), PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT,
                   env=env, check=True, timeout=120)  # fmt: skip
    return root


@pytest.fixture(scope="module")
def chromium():
    """Playwright's Chromium driver on Debian's binary, for one test module.

    Playwright's sync API keeps an event loop running in this thread, which makes Django refuse
    database calls; the tests here are plain sync code, so the check is off while it runs.
    """
    if not Path(CHROMIUM).exists():
        if os.environ.get("ALLOT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            yield browser
            browser.close()
    finally:
        os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)


@pytest.fixture
def page(chromium, server):
    """A fresh browser page that records every host it contacts in `page.hosts`."""
    context = chromium.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.hosts = set()
    page.on("request", lambda request: page.hosts.add(urlsplit(request.url).netloc))
    page.on("websocket", lambda socket: page.hosts.add(urlsplit(socket.url).netloc))
    page.set_default_timeout(10_000)
    yield page
    context.close()


@pytest.fixture
def artifacts() -> Path:
    """Where the tests' screenshots go."""
    path = Path(os.environ.get("ALLOT_TEST_ARTIFACTS", ROOT / "var" / "test-artifacts"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def sign_in(page, server: Server, username: str) -> None:
    """Sign in through the login form, as a person would.

    The test process hashes passwords with MD5 for speed, which the server (default hashers)
    does not accept, so the persona's password is stored again with PBKDF2 first.
    """
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import PBKDF2PasswordHasher

    hasher = PBKDF2PasswordHasher()
    get_user_model().objects.filter(username=username).update(
        password=hasher.encode(PASSWORD, hasher.salt(), iterations=1000)
    )
    page.goto(server.url + "/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(server.url + "/")


def launch_lab(page, server: Server, username: str, project: str = "team-a") -> str:
    """Sign in as `username`, launch Jupyter in `project` from the form as a person would, and
    wait until the page is the lab (on the notebooks' origin); its URL."""
    sign_in(page, server, username)
    page.goto(server.url + "/jupyter/new/")
    page.get_by_label("Project").select_option(project)
    page.get_by_role("button", name="Launch Jupyter").click()
    page.wait_for_url(f"**/sessions/{project}/jupyter-{username}/lab**", timeout=60_000)
    return page.url


def wait_for(check, timeout_s: float = 15.0):
    """`check()`'s first true value, asked every 0.2 s for up to `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout_s:g} s")
