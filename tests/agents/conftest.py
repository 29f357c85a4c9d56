"""Where the session tests keep their sessions, and which Python runs them.

Run as root (as CI runs), each session gets a system user of its own, which must reach the
sessions directory and run the interpreter, as on a real server. Two things of a test machine
are out of such a user's reach: pytest's temporary directories (under a 0700
`/tmp/pytest-of-root`) and a pyenv Python (under a 0700 `/root`). So the sessions live in a
directory of their own under /tmp, and when the test's own Python is out of reach, the sessions
run the system's Python of the same version in a small venv that sees this one's packages.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from agents.sessions import LocalSessions, _unreachable


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
    for lock in path.rglob("*--*.lock"):  # sessions here and in directories below
        project, _, name = lock.name.removesuffix(".lock").partition("--")
        LocalSessions(lock.parent).stop(project, name)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def make_sessions(sessions_dir, session_python):
    """LocalSessions in `sessions_dir`, run by `session_python`."""

    def make(**options) -> LocalSessions:
        return LocalSessions(options.pop("directory", sessions_dir), python=session_python,
                             **options)  # fmt: skip

    return make
