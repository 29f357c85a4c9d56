"""Issue 26 on Kubernetes: pods carry the job's CPU and memory requests and limits (validated
against the official schema, and sent by the agent to the fake API server), and the inventory
reads allocatable CPU and memory and takes failed GPUs out (allocatable nvidia.com/gpu below
capacity, or a GPU condition)."""

from __future__ import annotations

from datetime import UTC, datetime

import kubernetes_validate
import pytest

from agents.base import JobSpec, PodSpec
from agents.kubernetes import manifests
from agents.kubernetes.inventory import KubernetesConfig, api_client, inventory
from scheduler.quantity import GIB, MIB
from tests.agents.kubernetes.fake_api import node

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def pod_of(**fields) -> dict:
    base = {"project": "team-a", "name": "train-1", "started_at": NOW, "gpus": 2.0,
            "placement": (PodSpec("dgx1-1", (0, 1)),)}  # fmt: skip
    spec = JobSpec(**{**base, **fields})
    (pod,) = manifests.job_pods(spec, gpu_memory_bytes={"dgx1-1": 32 * GIB})
    kubernetes_validate.validate(pod, "1.30", strict=True)
    return pod["spec"]["containers"][0]


def test_a_pod_requests_its_cpu_and_memory_and_keeps_its_gpu_limit():
    container = pod_of(cpu_millis=4500, memory_bytes=16 * GIB, cpu_limit_millis=8000,
                       memory_limit_bytes=32 * GIB)  # fmt: skip
    assert container["resources"] == {
        "requests": {"cpu": "4500m", "memory": str(16 * GIB)},
        "limits": {"nvidia.com/gpu": 2, "cpu": "8000m", "memory": str(32 * GIB)},
    }


def test_without_limits_a_pod_has_requests_only_and_its_gpus():
    container = pod_of(cpu_millis=500, memory_bytes=512 * MIB)
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": str(512 * MIB)},
                                      "limits": {"nvidia.com/gpu": 2}}  # fmt: skip


def test_a_cpu_only_pod_asks_for_no_gpu():
    container = pod_of(gpus=0.0, placement=(PodSpec("dgx1-1"),), cpu_millis=2000)
    assert container["resources"] == {"requests": {"cpu": "2000m"}}


def test_a_fraction_asks_for_cpu_and_memory_but_no_gpu():
    container = pod_of(gpus=0.5, placement=(PodSpec("dgx1-1", (3,), 0.5),), memory_bytes=1 * GIB)
    assert container["resources"] == {"requests": {"memory": str(GIB)}}


def with_status(item: dict, **status) -> dict:
    item["status"].update(status)
    kubernetes_validate.validate(item, "1.30", strict=True)
    return item


def test_the_inventory_reads_allocatable_cpu_and_memory(cluster):
    cluster.nodes = [node("dgx1-1", 8)]  # allocatable cpu 64, memory 512Gi
    config = KubernetesConfig(host=cluster.url)
    (found,) = inventory(api_client(config), config)
    assert (found.cpu_millis, found.memory_bytes, found.failed_devices) == (64000, 512 * GIB, ())


@pytest.mark.parametrize(
    ("memory", "size"),
    [("200M", 200 * 10**6), ("200000000", 200 * 10**6), ("1.5Gi", 3 * 2**29), ("2e8", 2 * 10**8),
     ("256G", 256 * 10**9), ("1000500m", 1000)],
)  # fmt: skip
def test_the_inventory_reads_allocatable_memory_to_the_byte(cluster, memory, size):
    # issue 33: MiB rounded a node of 200M down to 190 MiB, under four pods of 50M
    item = with_status(node("n1", 1), allocatable={"cpu": "8", "memory": memory,
                                                   "nvidia.com/gpu": "1"})  # fmt: skip
    cluster.nodes = [item]
    config = KubernetesConfig(host=cluster.url)
    (found,) = inventory(api_client(config), config)
    assert found.memory_bytes == size


def test_requests_are_written_to_the_byte():
    container = pod_of(
        gpus=0,
        placement=(PodSpec("dgx1-1", ()),),
        memory_bytes=50 * 10**6,
        memory_limit_bytes=10**9,
    )
    assert container["resources"] == {"requests": {"memory": "50000000"},
                                      "limits": {"memory": "1000000000"}}  # fmt: skip


def test_gpus_gone_from_allocatable_are_failed_from_the_top(cluster):
    dropped = node("dgx1-1", 6)
    with_status(dropped, capacity={"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": "8"})
    cluster.nodes = [dropped]
    config = KubernetesConfig(host=cluster.url)
    (found,) = inventory(api_client(config), config)
    assert (found.gpus, found.failed_devices) == (8, (6, 7))


def test_a_gpu_condition_fails_every_device_and_all_failed_keeps_the_node(cluster):
    sick = node("dgx1-1", 0)
    conditions = [{"type": "Ready", "status": "True"},
                  {"type": "GpuUnhealthy", "status": "True"}]  # fmt: skip
    with_status(sick, capacity={"nvidia.com/gpu": "8"}, conditions=conditions)
    fine = node("dgx1-2", 8)
    with_status(fine, conditions=[{"type": "Ready", "status": "True"},
                                  {"type": "XidCriticalError", "status": "False"}])  # fmt: skip
    cluster.nodes = [sick, fine]
    config = KubernetesConfig(host=cluster.url)
    found = {n.name: n for n in inventory(api_client(config), config)}
    assert (found["dgx1-1"].gpus, found["dgx1-1"].failed_devices) == (8, tuple(range(8)))
    assert found["dgx1-2"].failed_devices == ()


def test_the_agent_creates_pods_with_the_jobs_requests_and_limits(agent, cluster):
    spec = JobSpec("team-a", "train", (PodSpec("dgx1-1", (0,)), PodSpec("dgx1-2", (0,))), NOW,
                   gpus=1.0, pods=2, cpu_millis=8000, memory_bytes=64 * GIB,
                   memory_limit_bytes=80 * GIB)  # fmt: skip
    agent.start(spec)
    for index in (0, 1):
        made = cluster.pods[("allot-team-a", f"train-{index}")]
        assert made["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "8000m", "memory": str(64 * GIB)},
            "limits": {"nvidia.com/gpu": 1, "memory": str(80 * GIB)},
        }
