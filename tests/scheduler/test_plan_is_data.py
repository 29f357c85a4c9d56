"""The plan is data: decisions with reasons citing rules, fair shares, and why jobs wait."""

from dataclasses import replace

from scheduler import Job, Node, Policy, Project, Snapshot, plan_cycle, settle
from scheduler.apply import apply_plan

NODES = (Node("dgx1-1", 8), Node("dgx1-2", 8))
TEAMS = (
    Project("team-a", 4, order=1),
    Project("team-b", 2, order=2),
    Project("team-c", 2, order=3),
    Project("team-d", 8, order=4),
)


def submit(snapshot, *jobs):
    """Submit one job at a time and settle after each, as FORMAT.md says."""
    for job in jobs:
        order = len(snapshot.jobs) + 1
        snapshot = replace(snapshot, jobs=(*snapshot.jobs, replace(job, order=order)))
        snapshot, _ = settle(snapshot)
    return snapshot


def crowded():
    """team-b and team-c over quota, team-d at 4 of its 8 (TR-4858 §4.8)."""
    snapshot = Snapshot(nodes=NODES, projects=TEAMS)
    return submit(
        snapshot,
        Job("team-a", "a-1", 4),
        Job("team-b", "b-1", 2),
        Job("team-b", "b-2", 2),
        Job("team-c", "c-1", 2),
        Job("team-c", "c-2", 2),
        Job("team-d", "d-1", 4),
    )


def test_r9_4_an_eviction_says_who_reclaims_and_how_far_over_the_victim_is():
    snapshot = crowded()
    snapshot = replace(snapshot, jobs=(*snapshot.jobs, Job("team-d", "d-2", 2, order=99)))
    plan = plan_cycle(snapshot)
    evict = next(d for d in plan.decisions if d.kind == "evict")
    assert evict.action == "reclaim"
    assert evict.beneficiary == ("team-d", "d-2")
    assert evict.reason.startswith("evicted: team-d reclaims its quota; team-")
    assert "above its fair share of 3 GPUs (R9.4)" in evict.reason
    start = next(d for d in plan.decisions if d.kind == "start")
    assert start.job == ("team-d", "d-2") and start.reason.endswith("(R9)")


def test_r9_2_a_job_beyond_its_projects_fair_share_waits_and_says_so():
    snapshot = crowded()
    snapshot = replace(snapshot, jobs=(*snapshot.jobs, Job("team-b", "b-3", 2, order=99)))
    plan = plan_cycle(snapshot)
    assert plan.decisions == ()
    assert plan.pending_reasons[("team-b", "b-3")] == (
        "would exceed team-b's fair share of 4 GPUs: 4 GPUs in use + 2 GPUs requested (R9.2)"
    )


def test_r3_1_a_job_over_its_projects_limit_waits_with_the_limit_named():
    projects = (Project("team-a", 4, limit=6),)
    snapshot = Snapshot(nodes=NODES, projects=projects)
    snapshot = submit(snapshot, Job("team-a", "a-1", 4), Job("team-a", "a-2", 4))
    reason = plan_cycle(snapshot).pending_reasons[("team-a", "a-2")]
    assert (
        reason == "would exceed team-a's limit of 6 GPUs: 4 GPUs in use + 4 GPUs requested (R3.1)"
    )


def test_r5_3_a_job_no_node_of_its_pool_can_hold_says_which_pool():
    nodes = (Node("a100-1", 4, pool="a100"), Node("v100-1", 8))
    projects = (Project("team-a", 8, node_pools=("a100",)),)
    snapshot = Snapshot(nodes=nodes, projects=projects, jobs=(Job("team-a", "big", 8),))
    assert plan_cycle(snapshot).pending_reasons[("team-a", "big")] == (
        "no node in pool a100 has 8 GPUs (R5.3)"
    )


def test_r3_2_an_interactive_job_beyond_quota_waits_even_with_idle_gpus():
    snapshot = Snapshot(nodes=NODES, projects=(Project("team-b", 1),))
    snapshot = submit(
        snapshot,
        Job("team-b", "nb-1", 1, type="interactive"),
        Job("team-b", "nb-2", 1, type="interactive"),
    )
    plan = plan_cycle(snapshot)
    assert plan.pending_reasons[("team-b", "nb-2")].endswith("(R3.2)")
    assert plan.allocated["team-b"] == 1


def test_r1_1_the_same_snapshot_always_gives_the_same_plan():
    snapshot = crowded()
    snapshot = replace(snapshot, jobs=(*snapshot.jobs, Job("team-d", "d-2", 2, order=99)))
    assert plan_cycle(snapshot, Policy()) == plan_cycle(snapshot, Policy())


def test_r1_3_a_settled_cluster_plans_nothing_more():
    snapshot = crowded()
    snapshot = replace(snapshot, jobs=(*snapshot.jobs, Job("team-d", "d-2", 2, order=99)))
    settled, plans = settle(snapshot)
    assert plans[-1].empty
    assert plan_cycle(apply_plan(settled, plans[-1])).empty


def test_r6_4_a_gang_below_its_pod_count_past_the_grace_period_is_evicted_whole():
    from scheduler import PodPlacement

    degraded = Job(
        "team-a",
        "gang",
        2,
        pods=2,
        order=1,
        placement=(PodPlacement("dgx1-1", (0, 1)),),
        degraded_since=100.0,
    )
    early = Snapshot(nodes=NODES, projects=TEAMS, jobs=(degraded,), now=150.0)
    assert [d.kind for d in plan_cycle(early).decisions] == []
    late = replace(early, now=161.0)
    plan = plan_cycle(late)
    evict = plan.decisions[0]
    assert (evict.kind, evict.action, evict.job) == (
        "evict",
        "stalegangeviction",
        ("team-a", "gang"),
    )
    assert evict.reason.endswith("(R6.4)")
    assert plan.allocated["team-a"] == 0
