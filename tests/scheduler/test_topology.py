"""Topology-aware placement (issue 38, R23, docs/topology.md): domains from node labels, required
and preferred levels, the reason of a gang that fits no domain, consolidation freeing one rack,
and jobs without a constraint placed as before."""

from __future__ import annotations

import dataclasses

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.session import Session
from scheduler.topology import domains, level_index

RACK = "example.com/rack"
BLOCK = "example.com/block"
LEVELS = {"default": (BLOCK, RACK)}
TEAMS = (Project("team-a", 32), Project("team-b", 32))


def cluster(racks: int, per_rack: int, gpus: int = 1, racks_per_block: int = 2) -> tuple:
    """`racks` racks of `per_rack` nodes n<rack><k>, two racks to a block."""
    return tuple(
        Node(
            f"n{r}{k}",
            gpus,
            labels=((BLOCK, f"b{r // racks_per_block}"), (RACK, f"r{r}")),
        )
        for r in range(racks)
        for k in range(per_rack)
    )


def running(name: str, node: str, project: str = "team-a", order: int = 0) -> Job:
    return Job(project, name, 1, order=order, placement=(PodPlacement(node, (0,)),))


def gang(name: str, pods: int, project: str = "team-b", **topology) -> Job:
    return Job(project, name, 1, pods=pods, order=100, **topology)


def plan(nodes, jobs, policy: Policy | None = None, topology=None):
    snapshot = Snapshot(
        tuple(nodes), TEAMS, tuple(jobs), topology=LEVELS if topology is None else topology
    )
    return plan_cycle(snapshot, policy or Policy())


def started(result, key) -> list[str]:
    for decision in result.decisions:
        if decision.job == key and decision.kind == "start":
            return sorted(p.node for p in decision.placement)
    return []


def racks_of(nodes: list[str]) -> set[str]:
    return {name[1] for name in nodes}


def test_r23_1_domains_group_nodes_by_labels_down_to_the_level_and_skip_unlabelled_ones():
    nodes = (*cluster(2, 2), Node("loose", 1, labels=((BLOCK, "b0"),)))
    session = Session(Snapshot(nodes, TEAMS, (), topology=LEVELS), Policy())
    blocks = domains(session.state, "default", 0)
    racks = domains(session.state, "default", 1)
    assert [(d.values, d.nodes) for d in blocks] == [
        (("b0",), ("loose", "n00", "n01", "n10", "n11"))
    ]
    assert [d.nodes for d in racks] == [("n00", "n01"), ("n10", "n11")]


def test_r23_1_a_level_is_named_by_its_label_key_or_its_short_name():
    assert level_index((BLOCK, RACK), "rack") == 1
    assert level_index((BLOCK, RACK), RACK) == 1
    assert level_index((BLOCK, RACK), "zone") is None


def test_r23_2_required_rack_goes_to_the_tightest_rack_that_holds_the_whole_gang():
    # Rack 0: 1 free, rack 1: 3 free, rack 2: 4 free; a gang of 3 fits racks 1 and 2: rack 1.
    nodes = cluster(3, 4)
    jobs = [running(f"s{i}", f"n0{i}") for i in range(3)] + [running("t", "n10")]
    result = plan(nodes, [*jobs, gang("g", 3, topology_required="rack")])
    assert started(result, ("team-b", "g")) == ["n11", "n12", "n13"]
    start = next(d for d in result.decisions if d.job == ("team-b", "g"))
    assert start.reason.endswith("; in rack r1 (R23.1)")


def test_r23_2_required_rack_waits_naming_the_level_and_the_roomiest_rack_though_pools_have_room():
    # Four racks of four 1-GPU nodes, two taken in each: 8 GPUs free, no rack with 4.
    nodes = cluster(4, 4)
    jobs = [running(f"s{r}{k}", f"n{r}{k}", order=r) for r in range(4) for k in range(2)]
    result = plan(
        nodes, [*jobs, gang("g", 4, topology_required="rack")], Policy(consolidation=False)
    )
    assert result.decisions == ()
    assert result.pending_reasons[("team-b", "g")] == (
        "no rack has room for all 4 pods (1 GPU each) at once: the roomiest, rack r0, has room "
        "for 2; the node pools for 8 (R23.2)"
    )


def test_r23_2_without_a_constraint_the_same_gang_spans_racks():
    nodes = cluster(4, 4)
    jobs = [running(f"s{r}{k}", f"n{r}{k}", order=r) for r in range(4) for k in range(2)]
    result = plan(nodes, [*jobs, gang("g", 4)], Policy(consolidation=False))
    assert len(racks_of(started(result, ("team-b", "g")))) > 1


def test_r23_3_preferred_block_packs_into_one_block_when_it_can():
    nodes = cluster(4, 2)  # blocks b0 (racks 0, 1) and b1 (racks 2, 3), 4 nodes each
    jobs = [running("s", "n00")]  # b0 has 3 free, b1 4: the gang of 3 goes to b0, the tighter
    result = plan(nodes, [*jobs, gang("g", 3, topology_preferred="block")])
    assert started(result, ("team-b", "g")) == ["n01", "n10", "n11"]


def test_r23_3_preferred_block_spills_to_two_blocks_not_more_when_it_must():
    nodes = cluster(6, 2)  # blocks b0, b1, b2 of 4 nodes; one node of each block taken
    jobs = [running(f"s{b}", f"n{2 * b}0", order=b) for b in range(3)]
    result = plan(nodes, [*jobs, gang("g", 5, topology_preferred="block")])
    placed = started(result, ("team-b", "g"))
    assert len(placed) == 5
    assert len({int(name[1]) // 2 for name in placed}) == 2


def test_r23_3_a_preferred_level_the_pool_lacks_places_the_job_anywhere():
    result = plan(cluster(2, 2), [gang("g", 3, topology_preferred="zone")])
    assert len(started(result, ("team-b", "g"))) == 3


def test_r23_4_a_required_level_no_pool_has_waits_and_no_action_tries():
    jobs = [running("s", "n00"), gang("g", 2, topology_required="zone")]
    result = plan(cluster(2, 2), jobs)
    assert result.decisions == ()
    assert result.pending_reasons[("team-b", "g")] == (
        "no node pool it may use (default) has a topology level 'zone' (R23.4)"
    )


def test_r23_4_a_gang_larger_than_every_rack_even_empty_waits_with_that_reason():
    result = plan(cluster(2, 2), [gang("g", 3, topology_required="rack")])
    assert result.decisions == ()
    assert result.pending_reasons[("team-b", "g")] == (
        "no rack could hold all 3 pods of 1 GPU even empty: the largest holds 2 (R23.4)"
    )


def test_r23_5_consolidation_frees_the_rack_cheapest_to_empty_for_a_required_gang():
    # Eight racks of four 1-GPU nodes: rack 0 holds three 1-GPU jobs, the others two each. No
    # rack has 4 free; racks 1-7 are freed by moving two jobs, rack 0 (first by name, which the
    # node-first order of E11 would empty) by moving three.
    nodes = cluster(8, 4)
    jobs = [running(f"s{r}{k}", f"n{r}{k}", order=r * 4 + k) for r in range(8) for k in range(2)]
    jobs.append(running("s02", "n02", order=99))
    result = plan(nodes, [*jobs, gang("g", 4, topology_required="rack")])
    placed = started(result, ("team-b", "g"))
    assert placed == ["n10", "n11", "n12", "n13"]
    assert [d for d in result.decisions if d.kind == "evict"] == []
    moves = [d for d in result.decisions if d.kind == "move"]
    assert sorted(d.job[1] for d in moves) == ["s10", "s11"]
    assert all("1" not in racks_of([p.node for p in d.placement]) for d in moves)


def test_r23_5_reclaim_keeps_a_required_gang_inside_one_rack():
    # team-a holds every GPU over a quota of 0; its two newest jobs sit in different racks, which
    # is where reclaim's victim order (R8.1) would put team-b's gang without the constraint.
    nodes = cluster(2, 2)
    teams = (Project("team-a", 0), Project("team-b", 4))
    jobs = [
        running(name, name.replace("s", "n"), order=i)
        for i, name in enumerate(["s00", "s10", "s01", "s11"])
    ]
    for topology in ({}, {"topology_required": "rack"}):
        snapshot = Snapshot(nodes, teams, (*jobs, gang("g", 2, **topology)), topology=LEVELS)
        result = plan_cycle(snapshot, Policy())
        placed = started(result, ("team-b", "g"))
        assert len(placed) == 2
        assert len(racks_of(placed)) == (1 if topology else 2)


def test_r23_6_jobs_without_a_constraint_are_placed_as_without_labels():
    nodes = cluster(4, 2, gpus=2)
    jobs = [
        running("s", "n00"),
        Job("team-b", "frac", 0.5, order=1),
        Job("team-b", "cpu", 0, order=2, cpu_millis=1000),
        Job("team-b", "pair", 1, pods=3, order=3),
    ]
    unlabelled = tuple(dataclasses.replace(n, labels=()) for n in nodes)
    with_labels = plan(nodes, jobs)
    without = plan(unlabelled, jobs, topology={})
    assert with_labels.decisions == without.decisions
