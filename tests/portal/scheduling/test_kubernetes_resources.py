"""Issue 26 with ALLOT_AGENT=kubernetes against the fake API server: the inventory's allocatable
CPU and memory reach the nodes, pods carry the jobs' requests, and a GPU the device plugin stops
advertising (allocatable nvidia.com/gpu drops below capacity) takes its job off within one
cycle, with an event naming the GPU."""

from __future__ import annotations

import pytest

from portal.cluster.models import Node
from portal.jobs.models import JobEvent, Status
from scheduler.quantity import GIB
from tests.agents.kubernetes.fake_api import node
from tests.portal.scheduling.test_kubernetes_cycle import (  # noqa: F401  (fixtures)
    GFD,
    agent,
    fake,
    k8s,
    monotonic,
    settle,
)

pytestmark = pytest.mark.django_db(transaction=True)


def gpus_advertised(server, healthy: int, capacity: int = 2) -> None:
    """The one node's allocatable GPUs as the device plugin reports them."""
    made = node("dgx1-1", healthy, labels=GFD)
    made["status"]["capacity"] = {"cpu": "64", "memory": "512Gi", "nvidia.com/gpu": str(capacity)}
    server.nodes = [made]


def test_allocatable_reaches_the_node_and_pods_carry_their_requests(k8s, agent, fake):  # noqa: F811
    gpus_advertised(fake, 2)
    k8s.project("team-a", 2)
    k8s.cycle()
    row = Node.objects.get(name="dgx1-1")
    assert (row.gpus, row.cpu_millis, row.memory_bytes, row.failed_in_cluster) == (
        2, 64000, 512 * GIB, [])  # fmt: skip
    k8s.submit(
        "team-a", "train", 1, cpu_millis=4000, memory_bytes=16 * GIB, memory_limit_bytes=20 * GIB
    )
    settle(k8s, agent, fake)
    resources = fake.pods[("allot-team-a", "train-0")]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "4000m", "memory": str(16 * GIB)},
                         "limits": {"nvidia.com/gpu": 1, "memory": str(20 * GIB)}}  # fmt: skip


def test_a_gpu_the_device_plugin_drops_takes_its_job_off_within_one_cycle(k8s, agent, fake):  # noqa: F811
    gpus_advertised(fake, 2)
    k8s.project("team-a", 2)
    k8s.cycle()
    k8s.submit("team-a", "first", 1)
    k8s.submit("team-a", "second", 1)
    settle(k8s, agent, fake)
    on = {job.name: job.placed_pods[0].devices[0] for job in
          (k8s.job("team-a", "first"), k8s.job("team-a", "second"))}  # fmt: skip
    assert sorted(on.values()) == [0, 1]
    gpus_advertised(fake, 1)  # one device unhealthy: allocatable 1 of capacity 2
    k8s.cycle()
    assert Node.objects.get(name="dgx1-1").failed_in_cluster == [1]
    victim = next(name for name, device in on.items() if device == 1)
    survivor = next(name for name in on if name != victim)
    assert k8s.job("team-a", victim).status == Status.PENDING
    assert k8s.job("team-a", survivor).status == Status.RUNNING
    messages = JobEvent.objects.filter(job_name=victim).values_list("message", flat=True)
    assert any("GPU 1 of dgx1-1 failed" in message for message in messages), list(messages)
    assert agent.watcher.wait_for(fake.rv)
    assert ("allot-team-a", f"{victim}-0") not in fake.pods  # its pod is gone
    settle(k8s, agent, fake)
    assert k8s.job("team-a", victim).status == Status.PENDING  # no healthy GPU free for it
    gpus_advertised(fake, 2)  # the device is back
    settle(k8s, agent, fake)
    assert Node.objects.get(name="dgx1-1").failed_in_cluster == []
    assert k8s.job("team-a", victim).status == Status.RUNNING
