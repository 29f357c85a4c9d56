"""Pods Allot did not place (issue 33): what they hold on a node is not Allot's to give.

KAI counts every pod bound to a node, whoever placed it (R2.6: the total divided is the ready
nodes' allocatable GPUs "minus resources of pods run by other schedulers"). The portal marks the
devices such pods hold (`Node.outside_devices`) and their CPU and memory; the core places
nothing there, leaves them out of the total, and never evicts anything for them.
"""

from __future__ import annotations

from scheduler import Job, Node, PodPlacement, Project, Snapshot, plan_cycle


def starts(plan) -> dict:
    return {d.job: d for d in plan.decisions if d.kind == "start"}


def test_r2_6_devices_held_outside_allot_take_no_pod_and_leave_the_total():
    nodes = (Node("n1", 8, outside_devices=tuple(range(8))), Node("n2", 8))
    team = (Project("team-a", 0, over_quota_weight=1),)
    jobs = tuple(Job("team-a", f"j{i}", 1, order=i) for i in range(10))
    plan = plan_cycle(Snapshot(nodes, team, jobs))
    placed = starts(plan)
    assert len(placed) == 8  # the 16 GPUs of two nodes, 8 of them held by others
    assert {d.placement[0].node for d in placed.values()} == {"n2"}
    assert plan.fair_shares["team-a"] == 8


def test_r2_6_a_node_fully_held_outside_allot_starts_nothing_more():
    """The lab's case: all 16 GPUs bound by another scheduler; Allot started two more (18 on 16)."""
    nodes = (
        Node("n1", 8, outside_devices=tuple(range(8))),
        Node("n2", 8, outside_devices=tuple(range(8))),
    )
    jobs = (Job("team-a", "one", 1, order=1), Job("team-a", "two", 1, order=2))
    plan = plan_cycle(Snapshot(nodes, (Project("team-a", 16),), jobs))
    assert not starts(plan)
    assert set(plan.pending_reasons) == {("team-a", "one"), ("team-a", "two")}


def test_r2_6_partly_held_devices_leave_the_others_usable():
    nodes = (Node("n1", 4, outside_devices=(2, 3)),)
    jobs = (Job("team-a", "pair", 2, order=1), Job("team-a", "more", 1, order=2))
    plan = plan_cycle(Snapshot(nodes, (Project("team-a", 4),), jobs))
    assert starts(plan)[("team-a", "pair")].placement[0].devices == (0, 1)
    assert ("team-a", "more") in plan.pending_reasons


def test_r5_1_cpu_and_memory_held_outside_allot_are_not_free():
    nodes = (Node("n1", 8, cpu_millis=16_000, memory_bytes=64 * 2**30, outside_cpu_millis=12_000,
                  outside_memory_bytes=32 * 2**30),)  # fmt: skip
    jobs = (
        Job("team-a", "fits", 1, cpu_millis=4_000, memory_bytes=32 * 2**30, order=1),
        Job("team-a", "no-room", 1, cpu_millis=1_000, order=2),
    )
    plan = plan_cycle(Snapshot(nodes, (Project("team-a", 8),), jobs))
    assert ("team-a", "fits") in starts(plan)
    assert "cores free" in plan.pending_reasons[("team-a", "no-room")]


def test_nothing_is_evicted_for_pods_outside_allot():
    """A job already on a device the portal could not keep out of the marks is left alone."""
    nodes = (Node("n1", 2, outside_devices=(1,)),)
    running = Job("team-a", "run", 1, placement=(PodPlacement("n1", (0,)),), started=0.0)
    plan = plan_cycle(Snapshot(nodes, (Project("team-a", 2),), (running,)))
    assert not [d for d in plan.decisions if d.kind == "evict"]
