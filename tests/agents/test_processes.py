"""Local processes for the simulated cluster's jobs with a command (issue 33): one per pod,
isolated as a notebook is, phases from exit codes, stopped with the job."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents import firewall
from agents.base import JobSpec, PodSpec
from agents.processes import LocalProcesses, expand, job_user
from agents.simulated import SimulatedAgent

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="jobs get users of their own as root")
GUARDED = ["postgres://postgres@127.0.0.1:5432/allot", "redis://127.0.0.1:6379/0"]

# What a pod tries: who it is, what it holds, and the portal's files and services.
PROBE = r"""
import json, os, socket, sys
found = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(), "cwd": os.getcwd(),
         "rank": os.environ["RANK"], "master": os.environ["MASTER_ADDR"],
         "leaked": sorted(k for k in os.environ if k.startswith(("SECRET", "DATABASE", "REDIS")))}
for label, path in (("secret", sys.argv[1]), ("other_log", sys.argv[2])):
    try:
        open(path).read()
        found[label] = "read"
    except OSError as exc:
        found[label] = type(exc).__name__
for label, port in (("postgres", 5432), ("redis", 6379)):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        found[label] = "connected"
    except OSError as exc:
        found[label] = type(exc).__name__
print(json.dumps(found))
"""


def wait(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def job(name: str, command: str, args: tuple[str, ...] = (), pods: int = 2, **fields) -> JobSpec:
    placement = tuple(PodSpec(f"n{i}", (0,)) for i in range(pods))
    return JobSpec("team-a", name, placement, datetime.now(UTC), pods=pods, command=command,
                   args=args, **fields)  # fmt: skip


@pytest.fixture
def directory():
    """A directory the jobs' users can reach (pytest's own are under a 0700 folder)."""
    path = Path(tempfile.mkdtemp(prefix="allot-processes-"))
    path.chmod(0o755)
    yield path
    for project, name in LocalProcesses(path / "jobs").started():
        LocalProcesses(path / "jobs").stop(project, name)
    shutil.rmtree(path, ignore_errors=True)


@as_root
def test_a_pod_runs_as_its_jobs_user_and_reaches_nothing_of_the_portal(
    directory, session_python, monkeypatch
):
    secret = directory / "secret_key"
    secret.write_text("canary-secret")
    secret.chmod(0o644)  # closed by the portal before the job starts (`private`)
    monkeypatch.setenv("SECRET_KEY", "canary-secret")
    processes = LocalProcesses(directory / "jobs", python=session_python, private=(secret,),
                               guarded=GUARDED)  # fmt: skip
    agent = SimulatedAgent(processes=processes)
    other = job("other", "python -c", ("print('canary-other-log')",), pods=1)
    probe = job("probe", "python -c", (PROBE, str(secret), str(directory / "jobs" /
                                                              "team-a.other.0.log")))  # fmt: skip
    agent.start(other)
    assert wait(lambda: agent.status(other).phase == "Succeeded")
    agent.start(probe)
    assert wait(lambda: agent.status(probe).phase != "Running")
    status = agent.status(probe)
    lines = agent.logs(probe)
    assert status.phase == "Succeeded", (status.message, lines)
    assert [status.pods[0].phase, status.pods[1].phase] == ["Succeeded", "Succeeded"]
    assert status.simulated  # the GPU figures are synthetic
    found = [json.loads(line.split("] ", 1)[1]) for line in lines]
    account = pwd.getpwnam(job_user("team-a", "probe"))
    for rank, pod in enumerate(found):
        assert (pod["rank"], pod["master"]) == (str(rank), "127.0.0.1")
        assert (pod["uid"], pod["gid"]) == (account.pw_uid, account.pw_gid)
        assert pod["gid"] == pwd.getpwnam(job_user("team-a", "other")).pw_gid  # the group
        assert pod["groups"] in ([], [account.pw_gid])
        assert pod["leaked"] == []
        assert pod["cwd"] == str(directory / "jobs" / "team-a.probe")
        assert (pod["secret"], pod["other_log"]) == ("PermissionError", "PermissionError")
        assert pod["postgres"] != "connected" and pod["redis"] != "connected"  # the firewall
    agent.stop("team-a", "probe")
    agent.stop("team-a", "other")
    with pytest.raises(KeyError):
        pwd.getpwnam(job_user("team-a", "probe"))  # the user went with the job
    assert processes.started() == []
    assert not (directory / "jobs" / "team-a.probe").exists()
    firewall.remove()


def test_stop_kills_every_pod_and_a_second_start_runs_nothing_twice(directory, session_python):
    processes = LocalProcesses(directory / "jobs", python=session_python, guarded=None,
                               single_user=True)  # fmt: skip
    agent = SimulatedAgent(processes=processes)
    sleeper = job("sleeper", "python -c", ("import time; print('up', flush=True); time.sleep(60)",))
    agent.start(sleeper)
    assert wait(lambda: len(agent.logs(sleeper)) == 2)
    pids = json.loads((directory / "jobs" / "team-a.sleeper.job.json").read_text())["pids"]
    assert agent.status(sleeper).phase == "Running"
    # another process of the portal (a fresh agent) finds them rather than starting more
    other = SimulatedAgent(processes=LocalProcesses(directory / "jobs", python=session_python,
                                                    single_user=True))  # fmt: skip
    other.start(sleeper)
    assert other.status(sleeper).phase == "Running"
    assert json.loads((directory / "jobs" / "team-a.sleeper.job.json").read_text())["pids"] == pids
    agent.stop("team-a", "sleeper")
    assert all(not Path(f"/proc/{pid}").exists() for pid in pids)
    assert agent.observe().jobs == {}
    assert list((directory / "jobs").glob("team-a.sleeper*")) == []


def test_pods_whose_starter_died_are_lost_and_fail_the_job(directory, session_python):
    processes = LocalProcesses(directory / "jobs", python=session_python, single_user=True)
    spec = job("orphan", "python -c", ("import time; time.sleep(60)",), pods=1)
    processes.run(spec)
    described = directory / "jobs" / "team-a.orphan.job.json"
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    data = json.loads(described.read_text())
    for pid in data["pids"]:
        os.killpg(pid, 9)
    described.write_text(json.dumps({**data, "starter": int(gone.stdout)}))
    assert wait(lambda: processes.pods("team-a", "orphan").phase == "Failed")
    assert "pod 0 " in processes.pods("team-a", "orphan").message
    processes.stop("team-a", "orphan")


def test_a_portal_that_is_not_root_refuses_to_run_a_command(directory, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 12345)
    agent = SimulatedAgent(processes=LocalProcesses(directory / "jobs", python="/bin/sh"))
    spec = job("mine", "true", pods=1)
    agent.start(spec)
    status = agent.status(spec)
    assert status.phase == "Failed"
    assert "refusing to run a researcher's command as the portal's own user" in status.message
    assert "ALLOT_SIM_PROCESSES" in status.message


def test_a_job_without_a_command_and_a_notebook_stay_simulated(directory):
    agent = SimulatedAgent(processes=LocalProcesses(directory / "jobs"))
    assert not agent.has_processes(job("plain", "", pods=2))
    notebook = job("nb", "", pods=1, type="interactive", ports=(8888,))
    assert not agent.has_processes(notebook)
    assert agent.has_processes(job("single", "python train.py", pods=1))
    assert not SimulatedAgent().has_processes(job("off", "python train.py"))


def test_a_move_replaces_the_runs_processes_and_leftovers_are_reported(directory, session_python):
    processes = LocalProcesses(directory / "jobs", python=session_python, single_user=True)
    agent = SimulatedAgent(processes=processes)
    first = job("moved", "python -c", ("import time; time.sleep(60)",), pods=1)
    agent.start(first)
    old = json.loads((directory / "jobs" / "team-a.moved.job.json").read_text())["pids"]
    later = replace(first, started_at=first.started_at + timedelta(seconds=5))
    agent.start(later)  # the job started again (a move, a resume): a new run, new processes
    new = json.loads((directory / "jobs" / "team-a.moved.job.json").read_text())["pids"]
    assert new != old and not Path(f"/proc/{old[0]}").exists()
    assert processes.started_at("team-a", "moved") == later.started_at
    # the earlier run's pod, ending late, records its code: not the new run's
    (directory / "jobs" / "team-a.moved.0.exit").write_text(f"{old[0]} 0")
    assert processes.pods("team-a", "moved").phase == "Running"
    # a portal process that did not start them (the starter died) still sees them, so its
    # reconciliation stops them when no job holds them any more
    fresh = SimulatedAgent(processes=LocalProcesses(directory / "jobs", python=session_python,
                                                    single_user=True))  # fmt: skip
    seen = fresh.observe().jobs[("team-a", "moved")]
    assert (seen.phase, seen.started_at) == ("Running", later.started_at)
    fresh.carry_out([("team-a", "moved")], [])
    assert processes.started() == [] and not Path(f"/proc/{new[0]}").exists()


def test_a_command_expands_variables_as_the_kubelet_does():
    env = {"NODE_RANK": "1", "MASTER_ADDR": "127.0.0.1"}
    assert expand("--node-rank=$(NODE_RANK)", env) == "--node-rank=1"
    assert expand("$(MASTER_ADDR):$(UNSET)", env) == "127.0.0.1:$(UNSET)"  # left as it is
    assert expand("$$(NODE_RANK) $HOME", env) == "$(NODE_RANK) $HOME"  # escaped; no shell
