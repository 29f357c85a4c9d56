"""`Job.placement` JSON: encoded and decoded in one module, the same pods both ways."""

from __future__ import annotations

from agents.base import PodSpec
from portal.jobs import placement
from portal.jobs.models import Job
from scheduler import PodPlacement


def test_a_plans_pods_come_back_from_their_json_in_pod_order():
    pods = (PodPlacement("dgx1-1", (0, 1), 1.0), PodPlacement("dgx1-2", (3,), 0.5))
    stored = placement.encode(pods)
    assert stored == [
        {"node": "dgx1-1", "devices": [0, 1], "share": 1.0},
        {"node": "dgx1-2", "devices": [3], "share": 0.5},
    ]
    assert tuple(PodPlacement(*pod) for pod in placement.decode(stored)) == pods
    assert tuple(PodSpec(*pod) for pod in placement.decode(stored)) == (
        PodSpec("dgx1-1", (0, 1), 1.0), PodSpec("dgx1-2", (3,), 0.5)
    )  # fmt: skip


def test_json_written_before_share_was_stored_reads_as_whole_devices():
    assert placement.decode([{"node": "n1", "devices": [2]}]) == (placement.Pod("n1", (2,), 1.0),)
    assert placement.decode([]) == placement.decode(None) == ()


def test_a_jobs_nodes_are_its_pods_nodes_once_each_in_pod_order():
    job = Job(placement=placement.encode([PodPlacement("b", (0,), 1.0),
                                          PodPlacement("a", (1,), 1.0),
                                          PodPlacement("b", (1,), 1.0)]))  # fmt: skip
    assert job.nodes == ["b", "a"]
    assert [pod.node for pod in job.placed_pods] == ["b", "a", "b"]
