"""The agent's connections to a real API server (issue 25, found by `make bench-k8s`).

Profiled on the lab, 200 starts opened 199 TLS connections (199 handshakes, the client
certificate loaded 199 times): a start's binding answer is never read, so its connection never
goes back to the client's pool. At 4,000 starts a cycle that is a handshake per job, and a
socket each until the garbage collector closes it.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agents.base import JobSpec, PodSpec
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    NODES,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    running_pods,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
STARTS = 10


def opened(agent) -> int:
    """New connections the agent's client has opened so far."""
    pools = agent.api.rest_client.pool_manager.pools  # urllib3's container: no iteration
    return sum(pools[key].num_connections for key in list(pools.keys()))


def test_starting_jobs_reuses_the_clients_connections(portal_on_lab, allot_lab):
    agent = portal_on_lab
    agent.observe()  # the watch and the inventory hold their connections
    now = datetime.now(UTC)
    jobs = [JobSpec("connections", f"c{i}", (PodSpec(NODES[i % 2], (i // 2,)),), now)
            for i in range(STARTS)]  # fmt: skip
    agent.start(jobs[0])  # the namespace
    before = opened(agent)
    for job in jobs[1:]:
        agent.start(job)
    eventually(lambda: len(running_pods(allot_lab.core)) == STARTS, "the pods to run")
    assert opened(agent) - before <= 2, f"{opened(agent) - before} new connections"
