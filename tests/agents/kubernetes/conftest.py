"""The fake API server and an agent talking to it, for the Kubernetes agent's tests."""

from __future__ import annotations

import pytest

from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from tests.agents.kubernetes.fake_api import FakeKubernetes, Monotonic, node


@pytest.fixture
def cluster():
    fake = FakeKubernetes()
    fake.nodes = [node("dgx1-1", 8, labels={"nvidia.com/gpu.memory": "32768"}),
                  node("dgx1-2", 8)]  # fmt: skip
    yield fake
    assert fake.invalid == []  # every object the agent sent was valid
    fake.close()


@pytest.fixture
def clock():
    return Monotonic()


def make_agent(cluster, clock, **settings) -> KubernetesAgent:
    config = KubernetesConfig(host=cluster.url, node_refresh_s=0, watch_timeout_s=5, **settings)
    return KubernetesAgent(config, monotonic=clock)


@pytest.fixture
def agent(cluster, clock):
    made = make_agent(cluster, clock, ingress_host="gpu.example.org")
    yield made
    made.close()
