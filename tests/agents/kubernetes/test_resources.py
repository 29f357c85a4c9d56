"""Issue 26 on Kubernetes: pods carry the job's CPU and memory requests and limits (validated
against the official schema, and sent by the agent to the fake API server), and the inventory
reads allocatable CPU and memory and takes failed GPUs out (allocatable nvidia.com/gpu below
capacity, or a GPU condition)."""

from __future__ import annotations

from datetime import UTC, datetime

import kubernetes_validate

from agents.base import JobSpec, PodSpec
from agents.kubernetes import manifests
from agents.kubernetes.inventory import KubernetesConfig, api_client, inventory
from tests.agents.kubernetes.fake_api import node

NOW = datetime(2026, 11, 1, tzinfo=UTC)


def pod_of(**fields) -> dict:
    base = {"project": "team-a", "name": "train-1", "started_at": NOW, "gpus": 2.0,
            "placement": (PodSpec("dgx1-1", (0, 1)),)}  # fmt: skip
    spec = JobSpec(**{**base, **fields})
    (pod,) = manifests.job_pods(spec, gpu_memory_mib={"dgx1-1": 32768})
    kubernetes_validate.validate(pod, "1.30", strict=True)
    return pod["spec"]["containers"][0]


def test_a_pod_requests_its_cpu_and_memory_and_keeps_its_gpu_limit():
    container = pod_of(cpu_millis=4500, memory_mib=16384, cpu_limit_millis=8000,
                       memory_limit_mib=32768)  # fmt: skip
    assert container["resources"] == {
        "requests": {"cpu": "4500m", "memory": "16384Mi"},
        "limits": {"nvidia.com/gpu": 2, "cpu": "8000m", "memory": "32768Mi"},
    }


def test_without_limits_a_pod_has_requests_only_and_its_gpus():
    container = pod_of(cpu_millis=500, memory_mib=512)
    assert container["resources"] == {"requests": {"cpu": "500m", "memory": "512Mi"},
                                      "limits": {"nvidia.com/gpu": 2}}  # fmt: skip


def test_a_cpu_only_pod_asks_for_no_gpu():
    container = pod_of(gpus=0.0, placement=(PodSpec("dgx1-1"),), cpu_millis=2000)
    assert container["resources"] == {"requests": {"cpu": "2000m"}}


def test_a_fraction_asks_for_cpu_and_memory_but_no_gpu():
    container = pod_of(gpus=0.5, placement=(PodSpec("dgx1-1", (3,), 0.5),), memory_mib=1024)
    assert container["resources"] == {"requests": {"memory": "1024Mi"}}


def with_status(item: dict, **status) -> dict:
    item["status"].update(status)
    kubernetes_validate.validate(item, "1.30", strict=True)
    return item


def test_the_inventory_reads_allocatable_cpu_and_memory(cluster):
    cluster.nodes = [node("dgx1-1", 8)]  # allocatable cpu 64, memory 512Gi
    config = KubernetesConfig(host=cluster.url)
    (found,) = inventory(api_client(config), config)
    assert (found.cpu_millis, found.memory_mib, found.failed_devices) == (64000, 524288, ())


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
                   gpus=1.0, pods=2, cpu_millis=8000, memory_mib=65536,
                   memory_limit_mib=81920)  # fmt: skip
    agent.start(spec)
    for index in (0, 1):
        made = cluster.pods[("allot-team-a", f"train-{index}")]
        assert made["spec"]["containers"][0]["resources"] == {
            "requests": {"cpu": "8000m", "memory": "65536Mi"},
            "limits": {"nvidia.com/gpu": 1, "memory": "81920Mi"},
        }
