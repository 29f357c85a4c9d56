"""Consolidation on every resource a node has (R11.1, E11 with issue 26): which jobs a node must
shed for one pod to fit (GPUs first, then the cores or memory still short), how nodes are ranked,
the total-room gate counting CPU and memory, and the victim-queue policy kept as KAI's."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.actions.consolidation import FreeResources, movers, node_first, occupants_by_node
from scheduler.quantity import GIB
from scheduler.session import Session
from scheduler_tools.scenario import load_scenario, replay

TEAMS = (Project("team-a", 8), Project("team-b", 8))
SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def run(node: str, name: str, gpus: float, *devices: int, order: int = 0, **resources) -> Job:
    placement = (PodPlacement(node, devices, 1.0 if gpus >= 1 else gpus),)
    return Job("team-a", name, gpus, order=order, placement=placement, **resources)


def session_of(nodes, jobs, policy: Policy | None = None) -> Session:
    return Session(Snapshot(tuple(nodes), TEAMS, tuple(jobs)), policy or Policy())


def names(jobs) -> list[str]:
    return [j.name for j in jobs] if jobs is not None else None


def movers_on(session: Session, node: str, job: Job):
    on_node = occupants_by_node(session, session.victims().by_queue)
    return movers(session, session.state.nodes[node], on_node.get(node, []), job)


def test_r11_1_a_pod_short_of_cores_sheds_the_job_without_gpus_that_alone_makes_them_up():
    node = Node("n1", 8, cpu_millis=32_000)
    jobs = [
        run("n1", "gpu", 2, 0, 1, cpu_millis=4_000),
        run("n1", "small", 0, order=1, cpu_millis=8_000),
        run("n1", "large", 0, order=2, cpu_millis=20_000),
    ]
    session = session_of([node], jobs)
    needs_16 = Job("team-b", "new", 4, cpu_millis=16_000)
    assert names(movers_on(session, "n1", needs_16)) == ["large"]
    needs_24 = Job("team-b", "new", 4, cpu_millis=24_000)  # no single one: the most first
    assert names(movers_on(session, "n1", needs_24)) == ["large", "small"]
    needs_7 = Job("team-b", "new", 4, cpu_millis=7_000)  # the smallest that covers it
    assert names(movers_on(session, "n1", needs_7)) == ["small"]


def test_r11_1_gpus_are_freed_first_smallest_first_then_the_memory_still_short():
    node = Node("n1", 4, memory_bytes=256 * GIB)
    jobs = [
        run("n1", "two", 2, 0, 1, memory_bytes=16 * GIB),
        run("n1", "one", 1, 2, order=1, memory_bytes=128 * GIB),
        run("n1", "cache", 0, order=2, memory_bytes=96 * GIB),
    ]
    session = session_of([node], jobs)
    # 2 GPUs and 64 GiB: moving "one" frees its GPU and 128 GiB; nothing more is short.
    assert names(movers_on(session, "n1", Job("team-b", "new", 2, memory_bytes=64 * GIB))) == [
        "one"
    ]
    # 2 GPUs and 200 GiB: "one" frees the GPU, then "cache" (no GPU) the memory still short.
    wants = Job("team-b", "new", 2, memory_bytes=200 * GIB)
    assert names(movers_on(session, "n1", wants)) == ["one", "cache"]


def test_r11_1_a_node_where_an_interactive_job_holds_the_cores_offers_nothing():
    node = Node("n1", 8, cpu_millis=32_000)
    notebook = dataclasses.replace(run("n1", "notebook", 0, cpu_millis=24_000), type="interactive")
    session = session_of([node], [notebook, run("n1", "etl", 0, order=1, cpu_millis=4_000)])
    assert movers_on(session, "n1", Job("team-b", "new", 8, cpu_millis=16_000)) is None


def test_e11_nodes_rank_by_gpus_moved_then_the_scarcer_share_then_jobs_then_name():
    nodes = [Node(f"n{i}", 8, cpu_millis=32_000, memory_bytes=128 * GIB) for i in (1, 2, 3, 4)]
    pinned = dataclasses.replace(run("n4", "n4-x", 0, cpu_millis=8_000), type="interactive")
    jobs = [
        run("n1", "n1-gpu", 1, 0, cpu_millis=24_000),  # moves a GPU
        run("n2", "n2-cpu", 0, order=1, cpu_millis=24_000),  # 75 % of the cores, one job
        run("n3", "n3-mem", 0, order=2, cpu_millis=8_000, memory_bytes=112 * GIB),  # 87.5 % memory
        run("n4", "n4-a", 0, order=3, cpu_millis=12_000),  # 75 % of the cores, two jobs
        run("n4", "n4-b", 0, order=4, cpu_millis=12_000),
        pinned,
    ]
    session = session_of(nodes, jobs)
    job = Job("team-b", "new", 4, cpu_millis=16_000, memory_bytes=64 * GIB)
    on_node = occupants_by_node(session, session.victims().by_queue)
    assert names(node_first(session, job, on_node)) == [
        "n2-cpu", "n4-b", "n4-a", "n3-mem", "n1-gpu"
    ]  # fmt: skip


def test_e11_a_gpu_only_job_is_offered_the_same_nodes_as_before_cpu_was_counted():
    # GPU-only jobs on nodes that track nothing else: fewest GPUs to move, then fewest jobs, then
    # name, and on a node the smallest then newest first, as E11 always ranked them (the
    # simulator's Philly figures stay identical).
    nodes = [Node("n1", 4), Node("n2", 4)]
    jobs = [run("n1", "a", 1, 0), run("n1", "b", 1, 1, order=1), run("n2", "c", 2, 0, 1, order=2)]
    session = session_of(nodes, jobs)
    on_node = occupants_by_node(session, session.victims().by_queue)
    assert names(node_first(session, Job("team-b", "new", 4), on_node)) == ["c", "b", "a"]


def test_r11_1_the_gate_counts_cpu_and_memory_of_the_pools_in_total():
    nodes = [Node("n1", 8, cpu_millis=32_000), Node("n2", 8, cpu_millis=32_000)]
    jobs = [run("n1", "etl-1", 0, cpu_millis=24_000), run("n2", "etl-2", 0, cpu_millis=24_000)]
    free = FreeResources(session_of(nodes, jobs))
    assert free.cover(Job("team-b", "fits", 8, cpu_millis=16_000))  # 8 + 8 cores free
    assert not free.cover(Job("team-b", "more", 8, cpu_millis=17_000))
    assert not free.cover(Job("team-b", "gang", 8, pods=2, cpu_millis=9_000))
    assert free.cover(Job("team-b", "gpus", 16))  # no CPU asked: GPUs alone


def test_r11_1_no_consolidation_when_the_cluster_lacks_the_cores_in_total():
    # n1's GPUs are idle and moving etl-1 to n2 would free 24 cores there, but the cluster has
    # 8 + 8 cores free and b-1 asks 20: the gate stops it before any scenario is simulated.
    nodes = [Node("n1", 8, cpu_millis=32_000), Node("n2", 0, cpu_millis=40_000)]
    jobs = [
        run("n1", "etl-1", 0, cpu_millis=24_000),
        run("n2", "etl-2", 0, order=1, cpu_millis=32_000),
        Job("team-b", "b-1", 8, order=2, cpu_millis=20_000),
    ]
    plan = plan_cycle(Snapshot(tuple(nodes), TEAMS, tuple(jobs)))
    assert plan.decisions == ()
    assert (
        "n1 has 8 GPUs free but only 8 of 32 cores free" in plan.pending_reasons[("team-b", "b-1")]
    )


def test_r11_1_a_cpu_only_job_is_consolidated_on_a_cluster_whose_gpus_are_all_taken():
    nodes = [Node("n1", 2, cpu_millis=32_000), Node("n2", 2, cpu_millis=32_000)]
    jobs = [
        run("n1", "g1", 2, 0, 1),
        run("n2", "g2", 2, 0, 1, order=1),
        run("n1", "etl-1", 0, order=2, cpu_millis=16_000),
        run("n2", "etl-2", 0, order=3, cpu_millis=16_000),
        Job("team-b", "build", 0, order=4, cpu_millis=24_000),
    ]
    plan = plan_cycle(Snapshot(tuple(nodes), TEAMS, tuple(jobs)))
    kinds = {d.job[1]: (d.kind, d.action) for d in plan.decisions}
    # n1 and n2 cost the same to empty (no GPU, half the cores, one job): n1 by name.
    assert kinds == {"etl-1": ("move", "consolidation"), "build": ("start", "consolidation")}


def test_e11_victim_queue_keeps_kais_order_for_a_cpu_only_job():
    """The CPU-only scenario under KAI's candidates: the victim queue offers the newest job of
    the most over-served project first (a-3 on n2), which moves to n1, and the job starts on
    n2; node-first empties n1, the first node by name among equally cheap ones."""
    scenario = load_scenario(
        SCENARIOS / "r11_1_consolidation_moves_a_cpu_job_to_make_room_for_a_cpu_only_job.json"
    )
    kai = dataclasses.replace(
        scenario,
        policy=dataclasses.replace(scenario.policy, consolidation_candidates="victim_queue"),
    )
    failures = replay(kai).failures
    assert "step 3: team-b/build on n2, want n1" in failures
    assert "step 3: team-a/a-3 on n1, want n2" in failures
    assert replay(scenario).failures == []


def test_r5_4_a_fraction_is_offered_the_smallest_share_whose_device_it_would_then_fit():
    node = Node("n1", 2)
    jobs = [run("n1", "x", 0.6, 0), run("n1", "y", 0.7, 1, order=1)]
    session = session_of([node], jobs)
    assert names(movers_on(session, "n1", Job("team-b", "new", 0.5))) == ["x"]
    assert names(movers_on(session, "n1", Job("team-b", "new", 0.3))) == []  # y's device has room


def test_r5_5_a_gpu_memory_request_counts_the_device_memory_of_the_node():
    node = Node("n1", 2, gpu_memory_bytes=40 * GIB)
    jobs = [run("n1", "half", 0.5, 0), run("n1", "most", 0.75, 1, order=1)]
    session = session_of([node], jobs)
    wants = Job("team-b", "new", 0.6, gpu_memory_bytes=24 * GIB)  # 600 of a 40 GiB device
    assert names(movers_on(session, "n1", wants)) == ["half"]
    too_big = Job("team-b", "huge", 1, gpu_memory_bytes=48 * GIB)  # more than a device holds
    on_node = occupants_by_node(session, session.victims().by_queue)
    assert names(node_first(session, too_big, on_node)) == []
