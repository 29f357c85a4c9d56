"""CPU, memory, GPU memory and failed devices in the scheduling core (issue 26).

A pod fits a node only if every resource fits, counting what running pods hold (R5.1); GPU
memory is placed on one device with that much free (R5.5) and counted by the smallest device,
limit-checked by the largest (R3.4); projects may have CPU and memory limits (R3.1); failed
devices leave placement and the cluster total (R2.6) and their jobs are evicted within one cycle;
the ETA and backfill never promise a start that CPU or memory forbid (B1).
"""

from __future__ import annotations

from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import (
    Department,
    Job,
    Node,
    PodPlacement,
    Policy,
    Project,
    Snapshot,
    plan_cycle,
    settle,
)
from scheduler.eta import cannot_start, estimate_starts
from scheduler.quantity import GIB

TEAM = (Project("team-a", 16),)


def on(node: str, *devices: int, share: float = 1.0) -> tuple[PodPlacement, ...]:
    return (PodPlacement(node, tuple(devices), share),)


def started(plan, key=("team-a", "new")):
    return {d.job: d for d in plan.decisions if d.kind == "start"}.get(key)


# ------------------------------------------------------------------------ R5.1: every resource


def test_r5_1_a_pod_needs_free_cpu_counting_what_running_pods_hold():
    nodes = (Node("n1", 8, cpu_millis=16_000), Node("n2", 8, cpu_millis=16_000))
    hog = Job("team-a", "hog", 1, cpu_millis=14_000, placement=on("n1", 0), order=1)
    new = Job("team-a", "new", 1, cpu_millis=4_000, order=2)
    plan = plan_cycle(Snapshot(nodes, TEAM, (hog, new)))
    assert started(plan).placement[0].node == "n2"  # n1 is fuller in GPUs but has 2 cores


def test_r5_1_a_gang_counts_the_cpu_of_its_pods_on_one_node_together():
    nodes = (Node("n1", 8, cpu_millis=16_000), Node("n2", 8, cpu_millis=16_000))
    gang = Job("team-a", "new", 1, pods=2, cpu_millis=10_000)
    plan = plan_cycle(Snapshot(nodes, TEAM, (gang,)))
    assert sorted(p.node for p in started(plan).placement) == ["n1", "n2"]


def test_r5_1_a_node_that_does_not_track_cpu_or_memory_is_never_limited_by_them():
    nodes = (Node("n1", 1),)
    job = Job("team-a", "new", 1, cpu_millis=10**9, memory_bytes=2**50)
    assert started(plan_cycle(Snapshot(nodes, TEAM, (job,)))) is not None


def test_r5_1_the_pending_reason_names_the_cpu_of_the_node_with_the_most_free_gpus():
    nodes = (Node("dgx1-1", 8, cpu_millis=16_000), Node("dgx1-2", 8, cpu_millis=16_000))
    jobs = (
        Job("team-a", "a", 8, cpu_millis=8_000, placement=on("dgx1-1", *range(8)), order=1),
        Job("team-a", "etl", 0, cpu_millis=12_000, placement=on("dgx1-2"), order=2),
        Job("team-a", "new", 8, cpu_millis=8_000, order=3),
    )
    reason = plan_cycle(Snapshot(nodes, TEAM, jobs)).pending_reasons[("team-a", "new")]
    assert reason == (
        "no node in the cluster has room for a pod of 8 GPUs, 8 cores: dgx1-2 has 8 GPUs free "
        "but only 4 of 16 cores free (R5)"
    )


def test_r5_1_a_pod_larger_than_every_node_in_memory_says_so():
    nodes = (Node("n1", 8, memory_bytes=64 * GIB),)
    job = Job("team-a", "new", 1, memory_bytes=100 * GIB)
    reason = plan_cycle(Snapshot(nodes, TEAM, (job,))).pending_reasons[("team-a", "new")]
    assert reason == "no node in the cluster has 100 GiB of memory: the largest has 64 GiB (R5)"


# ------------------------------------------------------------------------ R5.2: bin-packing


def test_r5_2_a_cpu_only_job_prefers_a_node_whose_gpus_are_taken_to_one_with_idle_gpus():
    nodes = (Node("full", 8, cpu_millis=32_000), Node("idle", 8, cpu_millis=32_000))
    jobs = (
        Job("team-a", "a", 8, placement=on("full", *range(8)), order=1),
        Job("team-a", "new", 0, cpu_millis=20_000, order=2),
    )
    assert started(plan_cycle(Snapshot(nodes, TEAM, jobs))).placement[0].node == "full"


def test_r5_2_spread_takes_the_node_with_the_most_cpu_left_among_equally_free_gpus():
    nodes = (Node("n1", 8, cpu_millis=32_000), Node("n2", 8, cpu_millis=32_000))
    jobs = (
        Job("team-a", "etl", 0, cpu_millis=24_000, placement=on("n2"), order=1),
        Job("team-a", "new", 1, cpu_millis=1_000, order=2),
    )
    spread = Policy(gpu_placement="spread")
    assert started(plan_cycle(Snapshot(nodes, TEAM, jobs), spread)).placement[0].node == "n1"
    assert started(plan_cycle(Snapshot(nodes, TEAM, jobs))).placement[0].node == "n2"


# ------------------------------------------------------------------------ R5.5 and R3.4: GPU memory


def test_r5_5_gpu_memory_request_goes_on_a_device_with_that_much_free_memory():
    nodes = (
        Node("small", 2, gpu_memory_bytes=16 * GIB),
        Node("large", 2, gpu_memory_bytes=40 * GIB),
    )
    job = Job("team-a", "new", 0.5, gpu_memory_bytes=20 * GIB)
    pod = started(plan_cycle(Snapshot(nodes, TEAM, (job,)))).placement[0]
    assert (pod.node, pod.share) == ("large", 0.5)  # 20 GiB of 40: half the device


def test_r5_5_gpu_memory_request_shares_a_device_only_where_its_memory_is_free():
    nodes = (Node("n1", 1, gpu_memory_bytes=40 * GIB),)
    first = Job("team-a", "first", 0.6, gpu_memory_bytes=24 * GIB, placement=on("n1", 0, share=0.6))
    fits = Job("team-a", "new", 0.4, gpu_memory_bytes=16 * GIB, order=2)
    assert started(plan_cycle(Snapshot(nodes, TEAM, (first, fits)))).placement[0].devices == (0,)
    too_big = Job("team-a", "new", 0.5, gpu_memory_bytes=20 * GIB, order=2)
    plan = plan_cycle(Snapshot(nodes, TEAM, (first, too_big)))
    assert started(plan) is None
    assert (
        "no device in the cluster has 20 GiB of GPU memory free (R5.5)"
        in (plan.pending_reasons[("team-a", "new")])
    )


def test_r5_5_gpu_memory_request_larger_than_every_device_can_never_start():
    nodes = (Node("n1", 8, gpu_memory_bytes=40 * GIB),)
    job = Job("team-a", "new", 2.0, gpu_memory_bytes=80 * GIB)
    snapshot = Snapshot(nodes, TEAM, (job,))
    assert "no GPU in the cluster has 80 GiB of memory: the largest has 40 GiB (R5.5)" in (
        cannot_start(snapshot, job)
    )
    assert started(plan_cycle(snapshot)) is None


def test_r3_4_gpu_memory_limit_check_uses_the_largest_device_and_accounting_the_smallest():
    nodes = (Node("big", 1, gpu_memory_bytes=80 * GIB), Node("small", 1, gpu_memory_bytes=20 * GIB))
    team = (Project("team-a", 1, limit=0.25),)
    job = Job("team-a", "new", 1.0, gpu_memory_bytes=20 * GIB)  # 20/20 by the smallest device
    plan = plan_cycle(Snapshot(nodes, team, (job,)))
    assert started(plan) is not None  # 20/80 = 0.25 by the largest: within the limit
    assert plan.allocated["team-a"] == 1.0
    pod = started(plan).placement[0]
    assert (pod.node, pod.share) == ("big", 0.25)  # a quarter of the 80 GiB device it is on


# ------------------------------------------------------------------------ R3.1: CPU, memory limits


def test_r3_1_cpu_limit_makes_a_job_over_limit_naming_cpu():
    team = (Project("team-a", 8, cpu_limit_millis=4_000),)
    jobs = (
        Job("team-a", "a", 1, cpu_millis=3_000, placement=on("n1", 0), order=1),
        Job("team-a", "new", 1, cpu_millis=2_000, order=2),
    )
    plan = plan_cycle(Snapshot((Node("n1", 8),), team, jobs))
    assert plan.pending_reasons[("team-a", "new")] == (
        "over limit: would exceed team-a's CPU limit of 4 cores: 3 cores in use + 2 cores "
        "requested (R3.1)"
    )


def test_r3_1_memory_limit_counts_every_pod_of_a_gang():
    team = (Project("team-a", 8, memory_limit_bytes=32 * GIB),)
    gang = Job("team-a", "new", 1, pods=3, memory_bytes=16 * GIB)
    snapshot = Snapshot((Node("n1", 8),), team, (gang,))
    assert (
        "memory limit of 32 GiB: 0 MiB in use + 48 GiB requested (R3.1)"
        in (plan_cycle(snapshot).pending_reasons[("team-a", "new")])
    )
    assert cannot_start(snapshot, gang).startswith("cannot start: would exceed team-a's memory")


def test_r3_1_a_department_cpu_limit_counts_the_jobs_of_all_its_projects():
    dept = (Department("dept-d", 8, cpu_limit_millis=4_000),)
    teams = (Project("team-a", 4, department="dept-d"), Project("team-b", 4, department="dept-d"))
    jobs = (
        Job("team-a", "a", 1, cpu_millis=3_000, placement=on("n1", 0), order=1),
        Job("team-b", "new", 1, cpu_millis=2_000, order=2),
    )
    plan = plan_cycle(Snapshot((Node("n1", 8),), teams, jobs, departments=dept))
    assert plan.pending_reasons[("team-b", "new")] == (
        "over limit: would exceed dept-d's CPU limit of 4 cores: 3 cores in use + 2 cores "
        "requested (R3.1)"
    )


def test_r3_1_a_department_memory_limit_makes_a_job_that_alone_exceeds_it_unable_to_start():
    dept = (Department("dept-d", 8, memory_limit_bytes=16 * GIB),)
    teams = (Project("team-a", 8, department="dept-d", memory_limit_bytes=64 * GIB),)
    big = Job("team-a", "new", 1, memory_bytes=20 * GIB)
    snapshot = Snapshot((Node("n1", 8),), teams, (big,), departments=dept)
    assert "dept-d's memory limit of 16 GiB" in plan_cycle(snapshot).pending_reasons[big.key]
    assert cannot_start(snapshot, big).startswith("cannot start: would exceed dept-d's memory")


# ------------------------------------------------------------------------ R2.6: failed devices


def test_r2_6_failed_devices_leave_the_cluster_total_and_placement():
    nodes = (Node("n1", 4, failed_devices=(0, 2)),)
    team = (Project("team-a", 0, over_quota_weight=1),)
    jobs = (Job("team-a", "new", 1, order=1), Job("team-a", "more", 4, order=2))
    plan = plan_cycle(Snapshot(nodes, team, jobs))
    assert plan.fair_shares["team-a"] == 2
    assert started(plan).placement[0].devices == (1,)
    assert plan.pending_reasons[("team-a", "more")] == (
        "no node in the cluster has 4 healthy GPUs: n1 has 2 (GPUs 0, 2 failed) (R5.3)"
    )


def test_r2_6_f1_a_job_on_a_failed_device_moves_to_healthy_ones_within_one_cycle_naming_the_gpu():
    nodes = (Node("dgx1-2", 8, failed_devices=(3,)),)
    jobs = (
        Job("team-a", "train", 2, placement=on("dgx1-2", 2, 3), order=1),
        Job("team-a", "notebook", 1, type="interactive", placement=on("dgx1-2", 4), order=2),
        Job("team-a", "fine", 1, placement=on("dgx1-2", 5), order=3),
    )
    plan = plan_cycle(Snapshot(nodes, TEAM, jobs))
    assert [(d.kind, d.job, d.action) for d in plan.decisions] == [
        ("move", ("team-a", "train"), "device-failure")
    ]
    (move,) = plan.decisions
    assert move.reason == "moved to dgx1-2: GPU 3 of dgx1-2 failed (R2.6)"
    assert 3 not in move.placement[0].devices


def test_r2_6_f3_a_job_on_a_failed_device_with_no_room_left_is_evicted_naming_the_gpu():
    nodes = (Node("n1", 2, failed_devices=(0,)),)
    jobs = (
        Job("team-a", "notebook", 1, type="interactive", placement=on("n1", 0), order=1),
        Job("team-a", "other", 1, type="interactive", placement=on("n1", 1), order=2),
    )
    plan = plan_cycle(Snapshot(nodes, TEAM, jobs))
    assert [(d.kind, d.job, d.reason) for d in plan.decisions] == [
        ("evict", ("team-a", "notebook"), "evicted: GPU 0 of n1 failed; it waits to run again")
    ]
    assert plan.decisions[0].action == "device-failure"


def test_r2_6_f1_an_interactive_job_on_a_failed_device_moves_too():
    nodes = (Node("n1", 2, failed_devices=(0,)),)
    job = Job("team-a", "notebook", 1, type="interactive", placement=on("n1", 0))
    plan = plan_cycle(Snapshot(nodes, TEAM, (job,)))
    assert [(d.kind, d.reason) for d in plan.decisions] == [
        ("move", "moved to n1: GPU 0 of n1 failed (R2.6)")
    ]


def test_r2_6_f2_its_gpus_are_not_lent_before_it_reclaims_them_issue_34_item_12():
    """After a GPU failed, an over-quota fill job started on the failed job's other device and
    was reclaimed by it in the next cycle (issue 34 item 12). The stranded job keeps its healthy
    device through allocate and reclaims what it lacks in the same cycle: one eviction, no start
    undone."""
    nodes = (Node("dgx1-1", 8), Node("dgx1-2", 8, failed_devices=(0,)))
    teams = (Project("nlp", 8), Project("vision", 4), Project("fill", 4))
    jobs = [Job("nlp", f"n{i}", 2, placement=on(f"dgx1-{1 + i // 2}", 2 * (i % 2), 2 * (i % 2) + 1),
                order=i) for i in range(4)]  # fmt: skip
    jobs += [Job("fill", f"fill-{i}", 1, placement=on(f"dgx1-{1 + i // 4}", 4 + i % 4),
                 order=10 + i) for i in range(8)]  # fmt: skip
    jobs += [Job("fill", f"fill-{i}", 1, order=10 + i) for i in (8, 9)]
    plan = plan_cycle(Snapshot(nodes, teams, tuple(jobs)))
    kinds = [(d.kind, "/".join(d.job)) for d in plan.decisions]
    assert ("move", "nlp/n2") in kinds
    assert [k for k in kinds if k[0] == "start"] == []  # no fill job lent the freed device
    assert len([k for k in kinds if k[0] == "evict"]) == 1  # one fill job gives its GPU back
    move = next(d for d in plan.decisions if d.job == ("nlp", "n2"))
    assert move.reason.startswith("moved: GPU 0 of dgx1-2 failed; restarted on dgx1-2: reclaimed")
    assert move.action == "device-failure"
    _, plans = settle(Snapshot(nodes, teams, tuple(jobs)))
    later = [d for p in plans[1:] for d in p.decisions if d.kind == "evict"]
    assert later == []  # nothing started in the first cycle is taken back after


# ------------------------------------------------------------------------ ETA and backfill (B1)


def test_eta_a_job_waiting_for_cpu_starts_when_the_job_holding_the_cpu_ends():
    nodes = (Node("n1", 8, cpu_millis=16_000),)
    jobs = (
        Job("team-a", "etl", 0, cpu_millis=14_000, placement=on("n1"), started=0.0,
            expected_s=500.0, order=1),
        Job("team-a", "gpu", 1, cpu_millis=1_000, placement=on("n1", 0), started=0.0,
            expected_s=100.0, order=2),
        Job("team-a", "new", 4, cpu_millis=4_000, order=3),
    )  # fmt: skip
    assert estimate_starts(Snapshot(nodes, TEAM, jobs))[("team-a", "new")] == 500.0


def test_b1_a_reservation_waits_for_the_cpu_not_only_the_gpus():
    nodes = (Node("n1", 8, cpu_millis=16_000),)
    jobs = (
        Job("team-a", "etl", 0, cpu_millis=12_000, placement=on("n1"), started=0.0,
            expected_s=500.0, order=1),
        Job("team-a", "gpu", 4, cpu_millis=2_000, placement=on("n1", 0, 1, 2, 3), started=0.0,
            expected_s=100.0, order=2),
        Job("team-a", "new", 4, cpu_millis=8_000, order=3),
    )  # fmt: skip
    plan = plan_cycle(Snapshot(nodes, TEAM, jobs, now=50.0), Policy(backfill=True))
    assert plan.reservations == {("team-a", "new"): 500.0}


def test_cannot_start_names_cpu_larger_than_every_node():
    nodes = (Node("n1", 8, cpu_millis=16_000), Node("n2", 8))
    job = Job("team-a", "new", 1, cpu_millis=32_000)
    assert cannot_start(Snapshot(nodes, TEAM, (job,)), job) is None  # n2 does not track CPU
    only = (Node("n1", 8, cpu_millis=16_000),)
    assert cannot_start(Snapshot(only, TEAM, (job,)), job) == (
        "cannot start until a larger node joins: no node in the cluster has 32 cores: the "
        "largest has 16 cores (R5)"
    )


# ------------------------------------------------------------------------ invariant


@st.composite
def workloads(draw):
    nodes = tuple(
        Node(
            f"n{i}",
            draw(st.integers(0, 4)),
            cpu_millis=draw(st.none() | st.integers(1, 16).map(lambda c: c * 1000)),
            memory_bytes=draw(st.none() | st.integers(1, 64).map(lambda m: m * GIB)),
            failed_devices=tuple(draw(st.lists(st.integers(0, 3), max_size=2))),
        )
        for i in range(draw(st.integers(1, 4)))
    )
    jobs = tuple(
        Job(
            "team-a",
            f"j{k}",
            draw(st.sampled_from([0, 0.5, 1, 2])),
            pods=draw(st.integers(1, 2)),
            cpu_millis=draw(st.integers(0, 8)) * 1000,
            memory_bytes=draw(st.integers(0, 32)) * GIB,
            order=k,
        )
        for k in range(draw(st.integers(1, 10)))
    )
    return Snapshot(nodes, TEAM, jobs)


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])  # fmt: skip
@given(workloads())
def test_r5_1_no_node_is_ever_over_committed_in_cpu_or_memory_nor_uses_a_failed_device(snapshot):
    final, _ = settle(snapshot)
    cpu, memory = defaultdict(int), defaultdict(int)
    nodes = {n.name: n for n in final.nodes}
    for job in final.jobs:
        for pod in job.placement:
            cpu[pod.node] += job.cpu_millis
            memory[pod.node] += job.memory_bytes
            assert not set(pod.devices) & set(nodes[pod.node].failed_devices)
            if job.gpus == 0:
                assert pod.devices == ()
    for name, node in nodes.items():
        assert node.cpu_millis is None or cpu[name] <= node.cpu_millis
        assert node.memory_bytes is None or memory[name] <= node.memory_bytes


def test_r9_6_a_job_asking_less_cpu_or_memory_than_one_that_failed_is_still_tried():
    from scheduler.actions.signatures import FailedJobs

    failed = FailedJobs()
    failed.add(Job("team-a", "hungry", 1, cpu_millis=8_000, memory_bytes=4 * GIB))
    assert failed.skip(Job("team-a", "same", 1, cpu_millis=8_000, memory_bytes=4 * GIB))
    assert not failed.skip(Job("team-a", "fewer-cores", 1, cpu_millis=4_000, memory_bytes=4 * GIB))
    assert not failed.skip(Job("team-a", "less-memory", 1, cpu_millis=8_000, memory_bytes=1 * GIB))
    by_memory = Job("team-a", "by-memory", 1, gpu_memory_bytes=40 * GIB, cpu_millis=8_000,
                    memory_bytes=4 * GIB)  # fmt: skip
    assert not failed.skip(by_memory)
