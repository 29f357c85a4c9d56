"""Issue 26 on a real API server (the lab): pods carry the jobs' CPU and memory requests and
limits as the API server stores them, the inventory reads the nodes' allocatable CPU and memory,
and a GPU the device plugin stops advertising (the node's allocatable `nvidia.com/gpu` drops
below its capacity) or a GPU condition on the node (a node problem detector's) moves the job off
it within a cycle, with an event naming the GPU."""

from __future__ import annotations

import pytest
from kubernetes.utils import parse_quantity

from portal.cluster.models import Node
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    GPUS_PER_NODE,
    Rest,
    add_nodes,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    job_pods,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
GPU = "nvidia.com/gpu"


@pytest.fixture
def rest(portal_on_lab, api, cluster_admin) -> Rest:
    made = Rest(api(cluster_admin))
    made.settle()  # a first cycle reads the cluster's nodes
    return made


def quantities(values: dict | None) -> dict:
    return {key: parse_quantity(value) for key, value in (values or {}).items()}


def test_pods_carry_requests_and_limits_and_nodes_their_allocatable(rest, allot_lab):
    rows = {row.name: (row.cpu_millis, row.memory_bytes) for row in Node.objects.all()}
    assert set(rows.values()) == {(64000, 512 * 2**30)}, rows  # the lab's 64 CPUs and 512Gi
    rest.project("res", 4)
    rest.submit("res", "loader", 1, cpu="4", memory="16Gi", cpu_limit="8", memory_limit="20Gi")
    rest.status_becomes("res", "loader", "Running")
    pod = allot_lab.core.read_namespaced_pod("loader-0", "allot-res")
    resources = pod.spec.containers[0].resources
    # the API server makes an extended resource's request its limit: the GPU is requested too
    assert quantities(resources.requests) == quantities({GPU: "1", "cpu": "4", "memory": "16Gi"})
    assert quantities(resources.limits) == quantities({GPU: "1", "cpu": "8", "memory": "20Gi"})


def test_a_node_of_200m_runs_four_pods_of_50m_as_kubernetes_places_them(rest, allot_lab):
    """Issue 33: memory counted in MiB rounded each 50M pod up (48 MiB) and the 200M node down
    (190 MiB), so the fourth pod waited where Kubernetes places it; counted in bytes, all four
    run on the node, and a fifth waits naming the memory."""
    core = allot_lab.core
    add_nodes(core, ("small-1",), gpus_per_node=1, memory_per_node="200M",
              label=["allot.io/pool=small"])  # fmt: skip
    try:
        eventually(lambda: (rest.settle(), Node.objects.filter(name="small-1").exists())[1],
                   "the inventory to read small-1")  # fmt: skip
        assert Node.objects.get(name="small-1").memory_bytes == 200 * 10**6
        rest.project("mem", 1, node_pools=["small"])
        for i in range(4):
            rest.submit("mem", f"m{i}", 0, memory="50M")
        running = rest.all_running()
        assert sorted(j["name"] for j in running) == ["m0", "m1", "m2", "m3"]
        assert {j["nodes"][0] for j in running} == {"small-1"}
        eventually(lambda: all(job_pods(core).get(("mem", f"m{i}-0")) == "small-1"
                               for i in range(4)), "four pods bound on small-1")  # fmt: skip
        pods = [core.read_namespaced_pod(f"m{i}-0", "allot-mem") for i in range(4)]
        assert [p.status.phase for p in pods] == ["Running"] * 4
        asked = {parse_quantity(p.spec.containers[0].resources.requests["memory"]) for p in pods}
        assert asked == {50 * 10**6}  # the API server stores "50000000" as "50M"
        rest.submit("mem", "m4", 0, memory="50M")
        rest.settle()
        fifth = rest.job("mem", "m4")
        assert fifth["status"] == "Pending" and "memory" in fifth["pending_reason"], fifth
    finally:
        for i in range(5):
            rest.call("delete", f"jobs/mem/m{i}/", ok=(204, 404))
        core.delete_node("small-1")


def advertise(core, node: str, healthy: int) -> None:
    """What the device plugin reports: `healthy` of the node's GPUs allocatable."""
    core.patch_node_status(node, {"status": {"allocatable": {GPU: str(healthy)}}})
    eventually(lambda: core.read_node(node).status.allocatable[GPU] == str(healthy),
               f"{node} advertising {healthy} GPUs")  # fmt: skip


def seen_failed(rest: Rest, node: str, failed: list[int]) -> None:
    """Cycles until the agent's inventory, read every `node_refresh_s`, has seen the change."""

    def seen() -> bool:
        rest.settle()
        return Node.objects.get(name=node).failed_in_cluster == failed

    eventually(seen, f"{node}'s failed GPUs to be {failed}")


def test_a_gpu_leaving_allocatable_moves_its_job_within_a_cycle(rest, allot_lab):
    core = allot_lab.core
    rest.project("whole", 8)
    rest.submit("whole", "wide", GPUS_PER_NODE)
    first = rest.status_becomes("whole", "wide", "Running")["nodes"][0]
    other = next(name for name in allot_lab.nodes if name != first)
    last = GPUS_PER_NODE - 1
    try:
        advertise(core, first, GPUS_PER_NODE - 1)
        seen_failed(rest, first, [last])  # the cycle that sees it evicts the job off it
        messages = [event["message"] for event in rest.events("whole", "wide")]
        assert any(f"GPU {last} of {first} failed" in m for m in messages), messages
        moved = rest.status_becomes("whole", "wide", "Running")
        assert moved["nodes"] == [other]
        eventually(lambda: job_pods(core).get(("whole", "wide-0")) == other,
                   "the pod bound on the healthy node")  # fmt: skip
    finally:
        advertise(core, first, GPUS_PER_NODE)
    seen_failed(rest, first, [])


def gpu_condition(core, node: str, status: str) -> None:
    """A node problem detector's GPU condition (an XID error) set True or False on `node`."""
    condition = {"type": "GpuXidError", "status": status, "reason": "XID79",
                 "message": "GPU has fallen off the bus"}  # fmt: skip
    core.patch_node_status(node, {"status": {"conditions": [condition]}})
    eventually(lambda: any(c.type == "GpuXidError" and c.status == status
                           for c in core.read_node(node).status.conditions or []),
               f"{node}'s GpuXidError {status}")  # fmt: skip


def test_a_node_condition_on_its_gpus_fails_them_all_and_moves_the_job(rest, allot_lab):
    """A condition a node problem detector sets (type naming the GPU or an XID) takes every GPU
    of the node out of placement: its job moves in the cycle that sees it, and the GPUs return
    when the condition clears."""
    core = allot_lab.core
    rest.project("cond", 8)
    rest.submit("cond", "held", 2)
    first = rest.status_becomes("cond", "held", "Running")["nodes"][0]
    other = next(name for name in allot_lab.nodes if name != first)
    try:
        gpu_condition(core, first, "True")
        seen_failed(rest, first, list(range(GPUS_PER_NODE)))
        messages = [event["message"] for event in rest.events("cond", "held")]
        named = f"GPU 0 of {first}, GPU 1 of {first} have failed"  # the two the job held
        assert any(named in m for m in messages), messages
        assert rest.status_becomes("cond", "held", "Running")["nodes"] == [other]
    finally:
        gpu_condition(core, first, "False")
    seen_failed(rest, first, [])
