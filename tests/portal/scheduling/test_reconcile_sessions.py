"""The cycle ends sessions no job holds any more (left by a portal process that died), through
the agent's own `sessions`; those of holding jobs stay."""

from __future__ import annotations

import pytest

from agents.sessions import Session
from agents.simulated import SimulatedAgent
from tests.portal.scheduling.conftest import Cluster

pytestmark = pytest.mark.django_db


class Servers:
    """The agent's sessions as a table: what `all` lists, and what was stopped."""

    def __init__(self, *keys: tuple[str, str]):
        self.running = {key: Session(*key, 9000, "t", 1, "/") for key in keys}
        self.stopped: list[tuple[str, str]] = []

    def get(self, project: str, name: str) -> Session | None:
        return self.running.get((project, name))

    def all(self) -> list[Session]:
        return list(self.running.values())

    def stop(self, project: str, name: str) -> bool:
        self.stopped.append((project, name))
        return self.running.pop((project, name), None) is not None


def test_the_cycle_stops_the_sessions_of_jobs_that_hold_no_gpus(clock):
    servers = Servers()
    cluster = Cluster(SimulatedAgent(start_delay_s=0, clock=clock, sessions=servers))
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "train", gpus=1)
    cluster.cycle()
    assert cluster.job("team-a", "train").holds_gpus
    servers.running = Servers(("team-a", "gone"), ("team-a", "train")).running
    cluster.cycle()
    assert servers.stopped == [("team-a", "gone")]
    assert list(servers.running) == [("team-a", "train")]
