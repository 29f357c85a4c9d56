"""Shared test set-up: real PostgreSQL, no background cycle, and the personas of the portal.

Unless DATABASE_URL is set, tests use postgres://postgres@127.0.0.1:5432/allot (pytest-django
creates and drops `test_allot`). pytest-django sets Django up before any conftest runs (with the
embedded SQLite default when DATABASE_URL is unset), so the database is switched here and
Django's connection handler is rebuilt before any test touches it. The variables are also
exported for subprocesses (Celery workers, servers) that tests start.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import dj_database_url
import pytest

from agents.sessions import LocalSessions, _unreachable
from scheduler.quantity import GIB
from tests.binaries import needs_built_binaries
from tests.live_server import live_server  # noqa: F401 (the fixture, pytest-django's improved)

TEST_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/allot"

os.environ.setdefault("DATABASE_URL", TEST_DATABASE_URL)
os.environ.setdefault("ALLOT_SIM_START_DELAY_S", "0")
os.environ.setdefault("ALLOT_SIM_JUPYTER", "0")  # the Jupyter tests turn real servers on
os.environ.setdefault("ALLOT_NOTIFICATIONS", "0")  # the notification tests turn them on
os.environ.setdefault("ALLOT_EMBEDDED_CYCLE", "0")
os.environ.setdefault("ALLOT_ETA_INTERVAL_S", "0")  # the ETA tests refresh them by hand


def _configure_django() -> None:
    """Point the already-loaded settings at the test database and make tests quick."""
    from django.conf import settings

    if not settings.configured:
        return
    settings.DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
    _reset_connections()
    settings.ALLOT_SIM_START_DELAY_S = float(os.environ["ALLOT_SIM_START_DELAY_S"])
    settings.ALLOT_SIM_JUPYTER = os.environ["ALLOT_SIM_JUPYTER"] not in ("0", "", "false")
    settings.ALLOT_NOTIFICATIONS = os.environ["ALLOT_NOTIFICATIONS"] not in ("0", "", "false")
    settings.ALLOT_ETA_INTERVAL_S = float(os.environ["ALLOT_ETA_INTERVAL_S"])
    settings.ALLOT_EMBEDDED_CYCLE = os.environ["ALLOT_EMBEDDED_CYCLE"] not in ("0", "", "false")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _reset_connections() -> None:
    """Forget connections made from the old DATABASES (model set-up opens one to read limits)."""
    from asgiref.local import Local
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close()
    connections._settings = None
    connections.__dict__.pop("settings", None)  # a cached_property over settings.DATABASES
    connections._connections = Local(connections.thread_critical)


_configure_django()


def pytest_collection_modifyitems(config, items):
    """The tests that run binaries built with Go go last, in their order: on a new machine
    `.ci/run` builds those binaries in the background while the others run (tests/binaries.py)."""
    items.sort(key=needs_built_binaries)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    """Let the embedded notification threads finish before the test's fixtures are torn down:
    a thread still reading while a transactional test's database is flushed made the flush fail
    (and the next test find the last one's rows)."""
    dispatch = sys.modules.get("portal.notify.dispatch")
    if dispatch is not None:
        dispatch.wait_idle()


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: the submission throttle's counts (issue 32 item
    8) and the sessions' one-use tickets are kept there, and must not carry from test to test."""
    from django.core.cache import cache

    cache.clear()


# --- Personas and a small cluster --------------------------------------------------------------


@pytest.fixture
def nodes(db):
    """Two DGX-1 nodes of 8 x V100 32 GB in pool "default"."""
    from portal.cluster.models import Node

    return [
        Node.objects.create(name=name, gpus=8, gpu_memory_bytes=32 * GIB, pool="default")
        for name in ("dgx1-1", "dgx1-2")
    ]


@pytest.fixture
def team_a(db):
    """Project team-a, quota 4."""
    from portal.tenancy.models import Project

    return Project.objects.create(name="team-a", quota=4)


@pytest.fixture
def team_b(db):
    """Project team-b, quota 2."""
    from portal.tenancy.models import Project

    return Project.objects.create(name="team-b", quota=2)


def _user(username: str, *, staff: bool = False, project=None, role: str | None = None):
    from django.contrib.auth import get_user_model

    from portal.tenancy.models import Membership

    user = get_user_model().objects.create_user(
        username=username, password="x-test-password-1", is_staff=staff, is_superuser=staff
    )
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role)
    return user


@pytest.fixture
def cluster_admin(db):
    """A cluster admin (is_staff): sees and changes everything."""
    return _user("root", staff=True)


@pytest.fixture
def owner(team_a):
    """The owner persona: admin of team-a."""
    return _user("alice", project=team_a, role="admin")


@pytest.fixture
def member(team_a):
    """The member persona: researcher in team-a."""
    return _user("bob", project=team_a, role="researcher")


@pytest.fixture
def viewer(team_a):
    """A viewer of team-a: reads, never writes."""
    return _user("vera", project=team_a, role="viewer")


@pytest.fixture
def outsider(team_b):
    """The outsider persona: a researcher of team-b, nothing in team-a."""
    return _user("eve", project=team_b, role="researcher")


@pytest.fixture
def api(db):
    """`api(user)` -> a DRF client authenticated with a new API token of `user` (`api()` =
    anonymous)."""
    from rest_framework.test import APIClient

    from portal.tenancy.services import issue_token, use_token

    def make(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            _, key = issue_token(user, "test client")
            use_token(key)  # its first use notes `last_used`: later requests write nothing
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return make


# --- Local Jupyter sessions -------------------------------------------------------------------
# Run as root (as CI runs), each session gets a system user of its own, which must reach the
# sessions directory and run the interpreter, as on a real server. Two things of a test machine
# are out of such a user's reach: pytest's temporary directories (under a 0700
# `/tmp/pytest-of-root`) and a pyenv Python (under a 0700 `/root`). So the sessions live in a
# directory of their own under /tmp, and when the test's own Python is out of reach, the sessions
# run the system's Python of the same version in a small venv that sees this one's packages.


@pytest.fixture(scope="session")
def session_python():
    """A Python with JupyterLab that the sessions' users may run."""
    if os.geteuid() != 0 or _unreachable(Path(sys.executable), executable=True) is None:
        yield sys.executable
        return
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = shutil.which(f"python{version}", path="/usr/local/bin:/usr/bin")
    if base is None or _unreachable(Path(base), executable=True):
        pytest.skip(f"no Python {version} that an unprivileged user may run")
    venv = Path(tempfile.mkdtemp(prefix="allot-session-python-"))
    venv.chmod(0o755)
    subprocess.run([base, "-m", "venv", "--without-pip", str(venv)], check=True)
    packages = sysconfig.get_paths()["purelib"]
    (venv / "lib" / f"python{version}" / "site-packages" / "allot-venv.pth").write_text(
        f"import site; site.addsitedir({packages!r})\n"
    )
    yield str(venv / "bin" / "python")
    shutil.rmtree(venv, ignore_errors=True)


@pytest.fixture
def sessions_dir():
    """An empty directory for sessions, reachable by their users; every session left in it is
    stopped (and its user deleted) at the end."""
    path = Path(tempfile.mkdtemp(prefix="allot-sessions-"))
    yield path
    for owner in path.rglob("*.*.owner"):  # sessions here and in directories below
        project, _, name = owner.name.removesuffix(".owner").partition(".")
        LocalSessions(owner.parent).stop(project, name)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_sessions(sessions_dir, session_python):
    """LocalSessions in `sessions_dir`, run by `session_python`."""

    def make(**options) -> LocalSessions:
        return LocalSessions(options.pop("directory", sessions_dir), python=session_python,
                             **options)  # fmt: skip

    return make
