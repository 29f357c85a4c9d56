"""A simulated Jupyter job is Running exactly when its real server answers (issue 24 item 1): the
simulated start delay is not added to the server's own start, and the agent tells the portal the
moment the server answers, so the cycle it asks for records Running then."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime

import pytest

from agents.base import JobSpec, PodSpec
from agents.simulated import SimulatedAgent

pytestmark = pytest.mark.slow


def notebook(name: str = "nb") -> JobSpec:
    return JobSpec("team-e", name, (PodSpec("n1", (0,), 0.5),), datetime.now(UTC),
                   type="interactive", gpus=0.5, ports=(8888,))  # fmt: skip


def test_a_jupyter_job_is_running_when_its_server_answers_and_the_agent_says_so_then(
    make_sessions,
):
    answered = threading.Event()
    agent = SimulatedAgent(start_delay_s=600, sessions=make_sessions(),
                           on_session_ready=answered.set)  # fmt: skip
    spec = notebook()
    agent.start(spec)
    try:
        assert agent.status(spec).phase == "ContainerCreating"  # not answering yet
        assert answered.wait(60), "the agent never said the server answers"
        told = time.monotonic()
        assert agent.sessions.ready("team-e", "nb")
        assert agent.status(spec).phase == "Running"  # 600 s of simulated delay or not
        assert time.monotonic() - told < 1.0
    finally:
        agent.stop("team-e", "nb")


def test_a_session_stopped_before_it_answers_is_not_announced(make_sessions):
    answered = threading.Event()
    agent = SimulatedAgent(sessions=make_sessions(), on_session_ready=answered.set)
    agent.start(notebook("gone"))
    agent.stop("team-e", "gone")
    assert not answered.wait(3)


def test_a_sessions_lab_page_skips_the_build_check_and_the_language_server_client(make_sessions):
    """The lab's page as a session serves it: no /lab/api/build at each load (seconds of the
    server's CPU) and no language-server client (no server for it: a 404 and console errors)."""
    import json
    import re
    import urllib.request

    sessions = make_sessions()
    session = sessions.start("team-e", "light")
    try:
        deadline = time.monotonic() + 60
        while not sessions.ready("team-e", "light") and time.monotonic() < deadline:
            time.sleep(0.1)
        token = {"Authorization": f"token {session.token}"}
        request = urllib.request.Request(f"{session.upstream}lab", headers=token)
        page = urllib.request.urlopen(request, timeout=10).read().decode()
        found = re.search(r'id="jupyter-config-data"[^>]*>(.*?)</script>', page, re.S)
        config = json.loads(found.group(1))
        assert (config["buildCheck"], config["buildAvailable"]) == (False, False)
        disabled = config["disabledExtensions"]  # (the page lists them)
        assert "@jupyterlab/lsp-extension" in disabled
        assert "@jupyterlab/notebook-extension:language-server" in disabled
    finally:
        sessions.stop("team-e", "light")
