"""Issue 24: a Jupyter session starts wherever the portal runs, however it was installed.

The image (Dockerfile) installs `requirements.txt` only and runs the portal from /app: the
project is on the portal's path (its working directory) and on no other. A session's processes
run elsewhere (the session's home), as another user, with an environment of their own, so they
must need nothing of the portal's import path nor its files. Here the portal is a venv with
`requirements.txt` only (`scripts/replay-stress venv`, built once and cached) running a copy of
`agents/` from a directory the sessions' users may not even read; and a session that is slow to
start is ContainerCreating, not Failed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time
from datetime import UTC, datetime

import pytest

from agents import sessions as sessions_module
from agents.base import JobSpec, PodSpec
from agents.simulated import SimulatedAgent
from tests.paths import ROOT

pytestmark = pytest.mark.slow
STRESS = ROOT / "scripts" / "replay-stress"


@pytest.fixture(scope="session")
def requirements_python() -> str:
    """The python of a venv with requirements.txt only (built on first use, then reused)."""
    done = subprocess.run([str(STRESS), "venv"], capture_output=True, text=True, timeout=3600)
    if done.returncode == 3:
        pytest.skip(f"no venv with requirements.txt only (no package index?): {done.stderr}")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]


def test_the_requirements_venv_has_not_the_project(requirements_python):
    found = subprocess.run([requirements_python, "-I", "-c", "import agents"], cwd="/",
                           capture_output=True, text=True)  # fmt: skip
    assert found.returncode != 0 and "No module named 'agents'" in found.stderr


def test_a_session_starts_from_a_requirements_only_venv_with_the_project_on_no_path(
    requirements_python, sessions_dir, tmp_path_factory
):
    """The portal process imports `agents` from its working directory only (as in /app), a
    directory closed to every other user; its session starts, answers, and stops."""
    app = tmp_path_factory.mktemp("app")
    shutil.copytree(ROOT / "agents", app / "agents",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    app.chmod(0o700)  # the sessions' users cannot read a file of the portal's
    portal = textwrap.dedent(f"""
        import json, sys, time
        from agents.sessions import LocalSessions
        sessions = LocalSessions({str(sessions_dir)!r}, single_user=True)
        session = sessions.start("team-img", "nb")
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not sessions.ready("team-img", "nb"):
            if sessions.failure("team-img", "nb"):
                break
            time.sleep(0.2)
        answer = {{"ready": sessions.ready("team-img", "nb"), "pid": session.pid,
                   "failure": sessions.failure("team-img", "nb"),
                   "python": sys.executable, "imported": sys.modules["agents"].__file__}}
        sessions.stop("team-img", "nb")
        print(json.dumps(answer))
    """)
    environment = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}  # no PYTHONPATH, no venv active
    done = subprocess.run([requirements_python, "-c", portal], cwd=app, env=environment,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["imported"].startswith(str(app))  # the copy, not this checkout
    assert answer["python"] == requirements_python
    assert answer["failure"] is None, answer["failure"]
    assert answer["ready"], (sessions_dir / "team-img.nb.log").read_text(errors="replace")
    assert not (sessions_dir / "team-img.nb.json").exists()  # stopped


def test_a_session_slow_to_start_is_container_creating_not_failed(make_sessions, session_python):
    slow = (session_python, "-c", "import time; time.sleep(60)")  # never answers while we look
    agent = SimulatedAgent(sessions=make_sessions(command=slow, single_user=True))
    job = JobSpec("team-img", "slow", (PodSpec("n1", (0,), 0.5),), datetime.now(UTC),
                  type="interactive", gpus=0.5, ports=(8888,))  # fmt: skip
    agent.start(job)
    try:
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline:
            status = agent.status(job)
            assert (status.phase, status.message) == ("ContainerCreating", "")
            time.sleep(0.5)
    finally:
        agent.stop("team-img", "slow")


@pytest.mark.skipif(os.geteuid() != 0, reason="sessions get users of their own as root")
def test_a_busy_password_file_delays_a_session_instead_of_failing_it(make_sessions, monkeypatch):
    """useradd's "cannot lock /etc/passwd" (another process holds it) is waited out."""
    run, refused = subprocess.run, []

    def busy_useradd(command, *args, **kwargs):
        if command[0] == "useradd" and len(refused) < 3:
            refused.append(command[-1])
            return subprocess.CompletedProcess(command, 1, "", "useradd: cannot lock /etc/passwd")
        return run(command, *args, **kwargs)

    monkeypatch.setattr(sessions_module.subprocess, "run", busy_useradd)
    sessions = make_sessions()
    session = sessions.start("team-img", "busy")
    try:
        assert len(refused) == 3
        assert sessions.failure("team-img", "busy") is None
        assert sessions.get("team-img", "busy") == session
    finally:
        sessions.stop("team-img", "busy")
