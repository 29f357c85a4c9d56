"""The node inventory read through the official client from a local fake API server."""

from __future__ import annotations

import kubernetes_validate
import pytest
from kubernetes import client
from urllib3.exceptions import MaxRetryError

from agents.kubernetes.inventory import KubernetesConfig, api_client, inventory
from tests.agents.kubernetes.fake_api import FakeKubernetes, node


@pytest.fixture
def cluster():
    fake = FakeKubernetes()
    yield fake
    fake.close()


def test_gpu_nodes_with_model_memory_pool_readiness_and_cordon(cluster):
    dgx = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.memory": "32768",
           "allot.io/pool": "dgx"}  # fmt: skip
    cluster.nodes = [
        node("dgx1-2", 8, labels=dgx, unschedulable=True),
        node("dgx1-1", 8, labels=dgx),
        node("cpu-1", 0),
        node("a100-1", 4, ready=False),
    ]
    for item in cluster.nodes:
        kubernetes_validate.validate(item, "1.30", strict=True)
    config = KubernetesConfig(host=cluster.url)
    found = {n.name: n for n in inventory(api_client(config), config)}
    assert sorted(found) == ["a100-1", "dgx1-1", "dgx1-2"]  # cpu-1 has no GPUs
    one = found["dgx1-1"]
    assert (one.gpus, one.gpu_product, one.gpu_memory_bytes, one.pool, one.ready,
            one.schedulable) == (8, "Tesla-V100-SXM2-32GB", 2**35, "dgx", True, True)  # fmt: skip
    assert found["dgx1-2"].schedulable is False
    assert (found["a100-1"].ready, found["a100-1"].pool, found["a100-1"].gpu_memory_bytes) == (
        False, "default", None)  # fmt: skip


def test_the_nodes_are_read_from_the_apis_json_not_built_into_the_clients_models(
    cluster, monkeypatch
):
    """Issue 39: the observe stage reads the nodes every `node_refresh_s`; the client's models
    of them (every timestamp parsed) cost twenty times the CPU of their JSON."""
    cluster.nodes = [node("dgx1-1", 8), node("dgx1-2", 8, ready=False)]
    built = []
    decode = client.ApiClient.deserialize
    monkeypatch.setattr(
        client.ApiClient,
        "deserialize",
        lambda self, answer, kind: built.append(kind) or decode(self, answer, kind),
    )
    config = KubernetesConfig(host=cluster.url)
    found = inventory(api_client(config), config)
    assert [(n.name, n.gpus, n.ready) for n in found] == [("dgx1-1", 8, True), ("dgx1-2", 8, False)]
    assert built == []


def test_an_unreachable_api_server_raises_instead_of_inventing_nodes():
    config = KubernetesConfig(host="http://127.0.0.1:9")
    with pytest.raises(MaxRetryError, match="Connection refused"):
        inventory(api_client(config), config)
