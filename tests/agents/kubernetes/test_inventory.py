"""The node inventory read through the official client from a local fake API server."""

from __future__ import annotations

import kubernetes_validate
import pytest
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


def test_an_unreachable_api_server_raises_instead_of_inventing_nodes():
    config = KubernetesConfig(host="http://127.0.0.1:9")
    with pytest.raises(MaxRetryError, match="Connection refused"):
        inventory(api_client(config), config)
