"""A job no node could hold even with every node empty says so, whatever later actions try
(issue 26): its pending reason is placement's (R5.3, R5, R6.1), naming a failed device when one
keeps the only wide-enough node from holding it, and reclaim, preempt and consolidation do not try
it (scheduler/resources.py `unplaceable`)."""

from __future__ import annotations

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.quantity import GIB
from scheduler.resources import unplaceable
from scheduler.session import Session

# team-a below its fair share may reclaim; team-b runs over its quota and holds GPUs and cores.
TEAMS = (Project("team-a", 8), Project("team-b", 0, over_quota_weight=1))


def reason(plan, project: str = "team-a", name: str = "big") -> str:
    return plan.pending_reasons[(project, name)]


def running_b(node: str, gpus: int, cpu: int = 0) -> Job:
    pods = (PodPlacement(node, tuple(range(gpus))),)
    return Job("team-b", "held", gpus, order=0, placement=pods, cpu_millis=cpu)


def test_r5_3_a_pod_wider_than_every_healthy_node_names_the_failed_device_even_with_reclaim_on():
    nodes = (Node("n1", 8, failed_devices=(3,)), Node("n2", 4))
    jobs = (running_b("n2", 4), Job("team-a", "big", 8, order=1))
    plan = plan_cycle(Snapshot(nodes, TEAMS, jobs))
    assert reason(plan) == (
        "no node in the cluster has 8 healthy GPUs: n1 has 7 (GPU 3 failed) (R5.3)"
    )
    assert plan.decisions == ()  # team-b's job over its quota stays: reclaim did not try


def test_r5_3_of_several_wide_nodes_the_one_with_the_most_healthy_gpus_is_named():
    nodes = (Node("n1", 8, failed_devices=(0, 5)), Node("n2", 8, failed_devices=(6,)))
    plan = plan_cycle(Snapshot(nodes, TEAMS, (Job("team-a", "big", 8),)))
    assert reason(plan) == (
        "no node in the cluster has 8 healthy GPUs: n2 has 7 (GPU 6 failed) (R5.3)"
    )


def test_r5_3_a_pod_wider_than_every_node_keeps_the_plain_reason():
    plan = plan_cycle(Snapshot((Node("n1", 4),), TEAMS, (Job("team-a", "big", 8),)))
    assert reason(plan) == "no node in the cluster has 8 GPUs (R5.3)"


def test_r5_1_more_cores_than_any_node_says_so_where_reclaim_would_speak_of_fair_share():
    nodes = (Node("n1", 8, cpu_millis=80_000), Node("n2", 8, cpu_millis=64_000))
    teams = (Project("team-a", 1, over_quota_weight=0), TEAMS[1])  # fair share 1 GPU
    jobs = (running_b("n1", 8, cpu=8_000), Job("team-a", "big", 2, order=1, cpu_millis=96_000))
    plan = plan_cycle(Snapshot(nodes, teams, jobs))
    assert reason(plan) == "no node in the cluster has 96 cores: the largest has 80 cores (R5)"
    assert plan.decisions == ()


def test_r5_1_a_cpu_only_job_larger_than_every_node_in_memory_says_so_with_reclaim_on():
    nodes = (Node("n1", 8, memory_bytes=64 * GIB),)
    jobs = (running_b("n1", 8), Job("team-a", "big", 0, order=1, memory_bytes=128 * GIB))
    plan = plan_cycle(Snapshot(nodes, TEAMS, jobs))
    assert reason(plan) == (
        "no node in the cluster has 128 GiB of memory: the largest has 64 GiB (R5)"
    )


def test_r5_no_node_with_every_resource_at_once_is_said_even_when_each_fits_somewhere():
    nodes = (Node("wide", 8, cpu_millis=16_000), Node("fat", 4, cpu_millis=96_000))
    jobs = (Job("team-a", "big", 8, cpu_millis=64_000),)
    plan = plan_cycle(Snapshot(nodes, TEAMS, jobs))
    assert reason(plan) == (
        "no node in the cluster has room for a pod of 8 GPUs, 64 cores, even empty (R5)"
    )


def test_r6_1_a_gang_the_emptied_cluster_cannot_hold_says_how_many_pods_fit():
    nodes = (Node("n1", 8), Node("n2", 8, failed_devices=(2,)))
    jobs = (running_b("n1", 8), Job("team-a", "big", 8, pods=2, order=1))
    plan = plan_cycle(Snapshot(nodes, TEAMS, jobs))
    assert reason(plan) == (
        "the 2 pods of 8 GPUs each cannot all fit in the cluster: with every node empty it holds "
        "1 of them (R6.1)"
    )
    assert plan.decisions == ()


def test_r5_a_cordoned_node_is_out_so_the_job_says_no_node_has_it():
    nodes = (Node("n1", 8, schedulable=False), Node("n2", 4))
    plan = plan_cycle(Snapshot(nodes, TEAMS, (Job("team-a", "big", 8),)))
    assert reason(plan) == "no node in the cluster has 8 GPUs (R5.3)"


def test_r10_2_preempt_leaves_an_unplaceable_job_waiting_with_placements_reason():
    nodes = (Node("n1", 4, cpu_millis=32_000),)
    low = Job("team-a", "low", 4, order=0, placement=(PodPlacement("n1", (0, 1, 2, 3)),))
    big = Job("team-a", "big", 4, order=1, priority=10, cpu_millis=48_000)
    plan = plan_cycle(Snapshot(nodes, TEAMS, (low, big)))
    assert plan.decisions == ()
    assert reason(plan) == "no node in the cluster has 48 cores: the largest has 32 cores (R5)"


def test_r5_a_job_that_fits_an_emptied_node_is_not_unplaceable():
    nodes = (Node("n1", 8, failed_devices=(3,), cpu_millis=32_000), Node("n2", 4))
    snapshot = Snapshot(nodes, TEAMS, (running_b("n2", 4),))
    session = Session(snapshot, Policy())
    assert unplaceable(session, Job("team-a", "seven", 7, cpu_millis=32_000)) is None
    assert unplaceable(session, Job("team-a", "gang", 4, pods=2)) is None
    assert unplaceable(session, Job("team-a", "etl", 0, cpu_millis=1_000_000)) is None  # n2
    assert unplaceable(session, Job("team-a", "three", 4, pods=3)) is not None


def test_r5_a_job_whose_pools_hold_no_ready_node_says_so():
    teams = (Project("team-a", 8, node_pools=("gone",)),)
    plan = plan_cycle(Snapshot((Node("n1", 8),), teams, (Job("team-a", "big", 1),)))
    assert reason(plan) == "no ready node in pool gone has a healthy GPU (R5)"
