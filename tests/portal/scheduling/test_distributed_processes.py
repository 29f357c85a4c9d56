"""Distributed jobs in the embedded default (issue 33): a two-pod job with a command, submitted
through REST, runs its pods as real local processes that rendezvous over a socket."""

from __future__ import annotations

import shutil
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import pytest

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.scheduling import agent as agent_module
from portal.scheduling.cycle import run_cycle
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)

# Rank 1 connects to MASTER_ADDR:MASTER_PORT, rank 0 accepts: the rendezvous torch.distributed's
# TCPStore makes, with the standard library only (torch is not installed here).
RENDEZVOUS = r"""
import os, socket, sys, time
rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
assert os.environ["NODE_RANK"] == os.environ["PET_NODE_RANK"] == str(rank) and world == 2
assert sys.argv[1:] == [str(rank)]  # $(RANK) expanded as the kubelet expands it
assert "SECRET_KEY" not in os.environ and "DATABASE_URL" not in os.environ
if rank == 0:
    with socket.create_server(address) as server:
        peer, _ = server.accept()
        print("rank 0 of", world, "heard:", peer.recv(64).decode())
else:
    for _ in range(200):
        try:
            peer = socket.create_connection(address)
            break
        except OSError:
            time.sleep(0.05)
    peer.sendall(b"hello from rank 1")
    print("rank 1 of", world, "connected to", address[0])
"""


@pytest.fixture
def processes_agent(settings, monkeypatch, session_python):
    """The process's agent as `make run` builds it: simulated, with real local processes."""
    directory = Path(tempfile.mkdtemp(prefix="allot-processes-"))
    directory.chmod(0o755)  # the jobs' users reach their homes through it
    settings.ALLOT_AGENT = "simulated"
    settings.ALLOT_SIM_PROCESSES = True
    settings.ALLOT_PROCESSES_DIR = directory
    settings.ALLOT_SESSIONS_PYTHON = session_python
    settings.ALLOT_SIM_START_DELAY_S = 0
    monkeypatch.setattr(agent_module, "_agent", None)
    agent = agent_module.get_agent()
    try:
        yield agent
    finally:
        processes = getattr(agent, "processes", None)
        for project, name in processes.started() if processes is not None else ():
            processes.stop(project, name)
        shutil.rmtree(directory, ignore_errors=True)


def cycles_until(job_id: int, done, timeout: float = 60.0) -> Job:
    deadline = time.monotonic() + timeout
    while True:
        run_cycle(wait=True)
        job = Job.objects.get(id=job_id)
        if done(job) or time.monotonic() > deadline:
            return job
        time.sleep(0.2)


def submit(api, user, name: str, command: list[str], pods: int = 2):
    body = {"project": "team-a", "name": name, "gpus": 1, "pods": pods, "command": command}
    answer = api(user).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 201, answer.content
    return Job.objects.get(project__name="team-a", name=name).id


@pytest.fixture
def room(db):
    Node.objects.create(name="n1", gpus=8, pool="default")
    Node.objects.create(name="n2", gpus=8, pool="default")
    Project.objects.create(name="team-a", quota=Decimal(4))


def test_a_two_pod_job_rendezvouses_over_a_socket_and_succeeds(processes_agent, room, api,
                                                                cluster_admin):  # fmt: skip
    job_id = submit(api, cluster_admin, "ddp", ["python", "-c", RENDEZVOUS, "$(RANK)"])
    job = cycles_until(job_id, lambda job: job.status in (Status.SUCCEEDED, Status.FAILED))
    assert job.status == Status.SUCCEEDED, job.runs.get().reason
    run_cycle(wait=True)  # the ended job is stopped, its logs kept first
    lines = job.runs.get().logs.splitlines()
    assert processes_agent.processes.started() == []  # stopped: no process, home or user left
    assert "[ddp-0] rank 0 of 2 heard: hello from rank 1" in lines
    assert "[ddp-1] rank 1 of 2 connected to 127.0.0.1" in lines


def test_a_pod_that_fails_fails_the_job_with_its_exit_code(processes_agent, room, api,
                                                           cluster_admin):  # fmt: skip
    script = "import os, sys; sys.exit(3 if os.environ['RANK'] == '1' else 0)"
    job_id = submit(api, cluster_admin, "broken", ["python", "-c", script])
    job = cycles_until(job_id, lambda job: job.status in (Status.SUCCEEDED, Status.FAILED))
    assert job.status == Status.FAILED
    assert "pod 1 exited with code 3" in job.runs.get().reason
