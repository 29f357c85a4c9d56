"""Local JupyterLab servers of the simulated cluster: one per job, found by every process,
stopped for good, and a crash reported instead of waited on forever."""

from __future__ import annotations

import os
import signal
import time
from datetime import UTC, datetime

import pytest

from agents.base import JobSpec, PodSpec
from agents.sessions import LocalSessions
from agents.simulated import SimulatedAgent

pytestmark = pytest.mark.slow


def wait(predicate, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_session_starts_once_answers_and_stops(make_sessions, sessions_dir):
    sessions = make_sessions()
    first = sessions.start("team-e", "nb")
    assert sessions.start("team-e", "nb").pid == first.pid  # idempotent
    assert LocalSessions(sessions_dir).get("team-e", "nb") == first  # another process sees it
    assert first.base_url == "/sessions/team-e/nb/"
    assert wait(lambda: sessions.ready("team-e", "nb"))
    assert sessions.stop("team-e", "nb")
    assert sessions.get("team-e", "nb") is None
    with pytest.raises(ProcessLookupError):
        os.kill(first.pid, 0)
    assert not sessions.stop("team-e", "nb")


def test_a_crashed_server_is_a_failure_with_its_last_words(make_sessions):
    sessions = make_sessions()
    session = sessions.start("team-e", "crash")
    os.killpg(session.pid, signal.SIGKILL)
    assert wait(lambda: sessions.failure("team-e", "crash") is not None, 10)
    assert "exited" in sessions.failure("team-e", "crash")
    sessions.stop("team-e", "crash")


def test_the_simulated_agent_runs_jupyter_jobs_for_real(make_sessions):
    agent = SimulatedAgent(sessions=make_sessions())
    spec = JobSpec("team-e", "nb", (PodSpec("n1", (0,), 0.5),), datetime.now(UTC),
                   type="interactive", gpus=0.5, ports=(8888,))  # fmt: skip
    train = JobSpec("team-e", "train", (PodSpec("n1", (1,)),), datetime.now(UTC), ports=(8888,))
    agent.start(spec)
    agent.start(train)
    assert agent.sessions.get("team-e", "train") is None  # only interactive jobs
    assert agent.status(spec).phase in ("ContainerCreating", "Running")
    assert wait(lambda: agent.status(spec).phase == "Running")
    assert agent.urls(spec) == [{"port": 8888, "url": "/sessions/team-e/nb/", "simulated": False}]
    agent.stop("team-e", "nb")
    assert agent.sessions.get("team-e", "nb") is None


def test_a_session_ends_when_the_portal_process_that_started_it_is_gone(
    sessions_dir, session_python
):
    """No stray Jupyter after `make run` stops: the watchdog ends the server with its parent."""
    import subprocess
    import sys

    from tests.paths import ROOT

    starter = (
        "from agents.sessions import LocalSessions; "
        f"s = LocalSessions({str(sessions_dir)!r}, python={session_python!r}, single_user=True, "
        f"command=({session_python!r}, '-c', 'import time; time.sleep(120)')); "
        "print(s.start('team-e', 'nb').pid)"
    )
    done = subprocess.run([sys.executable, "-c", starter], cwd=ROOT, capture_output=True,
                          text=True, timeout=30, check=True)  # fmt: skip
    pid = int(done.stdout.strip())  # the starter has exited; its session must follow
    assert wait(lambda: not _running(pid), 10), "the session outlived its portal process"
    assert LocalSessions(sessions_dir).get("team-e", "nb") is None


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_stopping_jobs_that_had_no_session_leaves_no_file_behind(make_sessions, sessions_dir):
    """The simulated agent stops every job's session, most of which never had one: the
    directory a session start seals and a stop scans keeps its lock stripes only (a lock file
    per job and per user had piled up to 8,700 files and made a 4,000-job cycle 25 s)."""
    (sessions_dir / "team-old--nb.lock").write_text("")  # an earlier version's lock files
    (sessions_dir / "allot-0123456789ab.user-lock").write_text("")
    sessions = make_sessions()
    for index in range(500):
        assert not sessions.stop("team-e", f"train-{index}")
    assert {path.name for path in sessions_dir.iterdir()} >= {"locks"}
    assert len(list((sessions_dir / "locks").iterdir())) <= 2 * 64  # job and account stripes
    started = sessions.start("team-e", "nb")  # its seal removes the earlier version's locks
    assert not list(sessions_dir.glob("*.lock")) and not list(sessions_dir.glob("*.user-lock"))
    assert sessions.stop("team-e", "nb") and sessions.get("team-e", "nb") is None
    with pytest.raises(ProcessLookupError):
        os.kill(started.pid, 0)


def test_two_jobs_whose_names_joined_alike_get_two_servers(make_sessions, sessions_dir):
    """Issue 32 item 2: job `vision--nb` of project `ml` and job `nb` of project `ml--vision`
    were keyed alike (`ml--vision--nb`): the second start reused the first's server, and
    stopping the second killed the first's while its job still said Running."""
    sessions = make_sessions()
    first = sessions.start("ml", "vision--nb")
    second = sessions.start("ml--vision", "nb")
    assert second.pid != first.pid and second.base_url == "/sessions/ml--vision/nb/"
    assert wait(lambda: sessions.ready("ml", "vision--nb") and sessions.ready("ml--vision", "nb"))
    assert sessions.stop("ml--vision", "nb")
    assert sessions.get("ml", "vision--nb") == first and sessions.ready("ml", "vision--nb")
    sessions.stop("ml", "vision--nb")


def test_a_session_an_earlier_version_started_is_found_under_its_new_key(
    make_sessions, sessions_dir
):
    sessions = make_sessions()
    started = sessions.start("team-e", "nb")
    for suffix in (".json", ".log", ".owner"):  # as an earlier version named them
        os.replace(sessions_dir / f"team-e.nb{suffix}", sessions_dir / f"team-e--nb{suffix}")
    assert sessions.get("team-e", "nb") is None
    sessions.start("team-e", "other")  # a start seals the directory, which renames them
    assert sessions.get("team-e", "nb") == started
    assert sessions.stop("team-e", "nb") and sessions.stop("team-e", "other")


def test_the_server_takes_no_config_from_the_researchers_home_or_environment(
    make_sessions, sessions_dir, tmp_path
):
    """Issue 32 item 1: a `jupyter_server_config.py` written into the workspace's `.jupyter`
    (through the contents API), or in a folder the job's JUPYTER_CONFIG_PATH names, or code on
    its PYTHONPATH, was loaded by the notebook server; none is now."""
    marker = tmp_path / "loaded"
    hostile = f"open({str(marker)!r}, 'a').write('config ')\n"
    sessions = make_sessions()
    started = sessions.start("team-e", "nb", (("JUPYTER_CONFIG_PATH", str(tmp_path / "cfg")),
                                              ("PYTHONPATH", str(tmp_path / "py"))))  # fmt: skip
    home = sessions_dir / "team-e.nb"
    sessions.stop("team-e", "nb")
    for folder in (home / ".jupyter", tmp_path / "cfg"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "jupyter_server_config.py").write_text(hostile)
    (tmp_path / "py").mkdir()
    (tmp_path / "py" / "sitecustomize.py").write_text(hostile.replace("config", "code"))
    tmp_path.chmod(0o755)
    again = sessions.start("team-e", "nb", (("JUPYTER_CONFIG_PATH", str(tmp_path / "cfg")),
                                            ("PYTHONPATH", str(tmp_path / "py"))))  # fmt: skip
    assert again.pid != started.pid
    assert wait(lambda: sessions.ready("team-e", "nb"))
    assert not marker.exists(), marker.read_text()
    sessions.stop("team-e", "nb")
