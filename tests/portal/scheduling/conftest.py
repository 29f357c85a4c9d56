"""Fixtures of the scheduling-cycle tests: a frozen clock, a simulated agent, rows made directly."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from agents.simulated import SimulatedAgent
from portal.cluster.models import Node
from portal.jobs.models import HOLDING, Job, Status
from portal.jobs.services import delete_job, submit_job
from portal.scheduling.cycle import run_cycle
from portal.scheduling.settle import settle
from portal.tenancy.models import Project
from tests.paths import tr4858

TR4858 = tr4858()


class Clock:
    """A frozen clock the test moves by hand.

    It starts a minute ahead of the wall clock, so that rows stamped with the real time (a
    submission) always come before what the cycle stamps with this clock, however slow the set-up.
    """

    def __init__(self, now: datetime | None = None):
        self.now = now or datetime.now(UTC).replace(microsecond=0) + timedelta(minutes=1)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def agent(clock) -> SimulatedAgent:
    return SimulatedAgent(start_delay_s=0, clock=clock)


class Cluster:
    """Builds nodes, projects and jobs as rows, and runs cycles with the test's agent."""

    def __init__(self, agent: SimulatedAgent):
        self.agent = agent

    def node(self, name: str, gpus: int = 8, pool: str = "default") -> Node:
        return Node.objects.create(name=name, gpus=gpus, pool=pool)

    def project(self, name: str, quota: float, **fields) -> Project:
        return Project.objects.create(name=name, quota=Decimal(str(quota)), **fields)

    def submit(self, project: str, name: str, gpus: float = 1, **fields) -> Job:
        owner = Project.objects.get(name=project)
        return submit_job(None, owner, name=name, gpus=Decimal(str(gpus)), **fields)

    def delete(self, project: str, name: str) -> None:
        delete_job(Job.objects.get(project__name=project, name=name))

    def cycle(self):
        return run_cycle(self.agent, wait=True)

    def settle(self):
        results, settled = settle(self.agent)
        assert settled
        return results

    def job(self, project: str, name: str) -> Job:
        return Job.objects.get(project__name=project, name=name)

    def allocated(self) -> dict[str, float]:
        totals: dict[str, float] = {}
        for job in Job.objects.filter(status__in=HOLDING).select_related("project"):
            totals[job.project.name] = totals.get(job.project.name, 0.0) + job.allocated_gpus
        return {name: round(value, 3) for name, value in totals.items()}

    def pending(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for name in Job.objects.filter(status=Status.PENDING).values_list(
            "project__name", flat=True
        ):
            counts[name] = counts.get(name, 0) + 1
        return counts


@pytest.fixture
def cluster(agent) -> Cluster:
    return Cluster(agent)


def load_scenario(name: str) -> dict:
    return json.loads((TR4858.parent / name).read_text())


def device_use() -> dict[tuple[str, int], float]:
    """Share held on every (node, device) by all jobs that hold GPUs, from the database."""
    used: dict[tuple[str, int], float] = {}
    for placement in Job.objects.filter(status__in=HOLDING).values_list("placement", flat=True):
        for pod in placement:
            for device in pod["devices"]:
                key = (pod["node"], device)
                used[key] = round(used.get(key, 0.0) + pod["share"], 3)
    return used
