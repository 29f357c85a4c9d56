"""Quantities read exactly as Kubernetes reads them (issue 33), through the scenario format so
that the same JSON is the test before and after: memory in bytes, no rounding that makes an
exact fit fail, and a GPU-memory request of a whole device's memory is one GPU (R3.4, R5.5:
KAI turns GPU memory into a fraction of the device, and all of a device is the fraction 1)."""

import pytest

from scheduler_tools.scenario import parse_scenario, replay


def run(nodes, submit, expect):
    data = {
        "nodes": nodes,
        "projects": [{"name": "team-a", "quota": 8}],
        "steps": [{"submit": submit}, {"expect": expect}],
    }
    return replay(parse_scenario(data)).failures


@pytest.mark.parametrize(
    ("node", "pod"), [("200M", "50M"), ("256G", "64G"), ("200000000", "5e7"), ("1Gi", "256Mi")]
)
def test_a_node_holds_pods_whose_memory_adds_up_to_exactly_its_own(node, pod):
    # Kubernetes places all four; in MiB the pods rounded up and the node down, and one waited
    pods = [{"name": f"p{i}", "project": "team-a", "gpus": 0, "memory": pod} for i in range(4)]
    expect = {"running": ["team-a/p0", "team-a/p1", "team-a/p2", "team-a/p3"]}
    failures = run([{"name": "n1", "gpus": 0, "cpu": 8, "memory": node}], pods, expect)
    assert failures == []


def test_a_fifth_pod_that_does_not_fit_still_waits():
    pods = [{"name": f"p{i}", "project": "team-a", "gpus": 0, "memory": "50M"} for i in range(5)]
    nodes = [{"name": "n1", "gpus": 0, "cpu": 8, "memory": "200M"}]
    assert run(nodes, pods, {"pending": ["team-a/p4"]}) == []


@pytest.mark.parametrize("memory", ["80G", "80Gi", "81920Mi", "8e10"])
def test_a_gpu_memory_request_of_the_whole_device_is_one_gpu(memory):
    # R3.4 (the share of the smallest device) and R5.5 (placed on one device with that much free)
    nodes = [{"name": "n1", "gpus": 1, "cpu": 8, "memory": "1Ti", "gpu_memory": memory}]
    submit = [{"name": "m", "project": "team-a", "gpu_memory": memory}]
    expect = {"running": ["team-a/m"], "allocated": {"team-a": 1.0}, "devices": {"team-a/m": [0]}}
    assert run(nodes, submit, expect) == []
