"""Every driver offers the whole agent interface (`agents.base.Agent`), so the portal asks the
agent what it can do (`simulated`, `sessions`, `supports_shell`) instead of which kind it is."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.base import Agent, JobSpec, NoShell, PodSpec, Sessions, Shell
from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from agents.kubernetes.sessions import KubernetesSessions, session_token
from agents.kubernetes.shell import ExecShell
from agents.sessions import LocalSessions
from agents.simulated import SimulatedAgent

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def members(protocol: type) -> set[str]:
    """The attributes and methods a protocol asks for."""
    names = set(protocol.__annotations__) | set(vars(protocol))
    return {name for name in names if not name.startswith("_")}


@pytest.fixture
def kubernetes():
    agent = KubernetesAgent(KubernetesConfig(host="http://127.0.0.1:9", session_secret="s3cret"))
    yield agent
    agent.close()


@pytest.mark.parametrize("driver", [SimulatedAgent, KubernetesAgent])
def test_every_driver_has_every_member_of_the_interface(driver):
    assert {"simulated", "sessions", "supports_shell", "open_shell"} <= members(Agent)
    assert members(Agent) - {"sessions"} <= set(dir(driver))  # sessions: set per agent


@pytest.mark.parametrize("sessions", [LocalSessions, KubernetesSessions])
def test_both_kinds_of_sessions_offer_what_the_portal_asks(sessions):
    assert members(Sessions) <= set(dir(sessions))


def test_the_exec_stream_is_a_shell():
    assert members(Shell) <= set(dir(ExecShell))


def test_the_simulated_agent_has_no_shells_and_its_sessions_only_when_given(tmp_path):
    job = JobSpec("team-a", "j", (PodSpec("n1", (0,)),), NOW)
    agent = SimulatedAgent()
    assert agent.simulated and not agent.supports_shell and agent.sessions is None
    with pytest.raises(NoShell):
        agent.open_shell(job)
    sessions = LocalSessions(tmp_path)
    assert SimulatedAgent(sessions=sessions).sessions is sessions


def test_the_kubernetes_agent_opens_shells_and_finds_notebook_pods(kubernetes):
    assert not kubernetes.simulated and kubernetes.supports_shell
    session = kubernetes.sessions.get("team-a", "nb")
    assert session.token == session_token("s3cret", "team-a", "nb")
    assert session.host == "nb.allot-team-a.svc" and session.base_url == "/sessions/team-a/nb/"


def test_notebook_pods_leave_nothing_for_the_portal_to_sweep(kubernetes):
    """The pods go with their jobs (the agent's `stop`), so no session outlives its job."""
    assert kubernetes.sessions.all() == []
    assert kubernetes.sessions.stop("team-a", "nb") is False
