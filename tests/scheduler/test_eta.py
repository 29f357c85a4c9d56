"""Predicted start times of pending jobs (scheduler/eta.py): a forward simulation with no new
arrivals, jobs ending at their predicted ends (B1), the scheduler's own cycles in between."""

from __future__ import annotations

from dataclasses import replace

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.eta import cannot_start, estimate_starts, lower_bounds

TEAM = (Project("team-a", 16, order=1),)


def running(name, gpus, node, devices, expected, started=0.0, project="team-a", order=0):
    """A job running since `started`, predicted to take `expected` seconds."""
    placement = (PodPlacement(node, tuple(devices)),)
    return Job(
        project, name, gpus, placement=placement, started=started, expected_s=expected, order=order
    )


def queue_snapshot(now=0.0) -> Snapshot:
    """One 4-GPU node: r1 (2 GPUs) ends at 100, r2 (2 GPUs) at 300; p1 (2 GPUs, 50 s) and
    p2 (2 GPUs, 100 s) wait, p1 first."""
    jobs = (
        running("r1", 2, "n1", (0, 1), 100, order=1),
        running("r2", 2, "n1", (2, 3), 300, order=2),
        Job("team-a", "p1", 2, order=3, expected_s=50),
        Job("team-a", "p2", 2, order=4, expected_s=100),
    )
    return Snapshot((Node("n1", 4),), TEAM, jobs, now=now)


def test_eta_of_a_small_queue_follows_predicted_ends_exactly():
    # p1 takes r1's GPUs at 100 and ends at 150; p2 takes them then.
    assert estimate_starts(queue_snapshot()) == {("team-a", "p1"): 100, ("team-a", "p2"): 150}


def test_eta_counts_from_the_snapshot_clock_and_each_jobs_start():
    snapshot = queue_snapshot(now=60)
    jobs = tuple(replace(j, started=40.0) if j.name == "r1" else j for j in snapshot.jobs)
    etas = estimate_starts(replace(snapshot, jobs=jobs))
    assert etas == {("team-a", "p1"): 140, ("team-a", "p2"): 190}


def test_eta_is_now_for_a_job_that_fits_now():
    snapshot = Snapshot((Node("n1", 4),), TEAM, (Job("team-a", "p", 2),), now=7)
    assert estimate_starts(snapshot) == {("team-a", "p"): 7}


def test_eta_of_a_job_behind_an_overrun_job_is_now():
    """An overrun job counts as ending any moment (B1)."""
    snapshot = queue_snapshot(now=200)  # r1 was predicted to end at 100
    jobs = tuple(j for j in snapshot.jobs if j.name != "p2")
    assert estimate_starts(replace(snapshot, jobs=jobs)) == {("team-a", "p1"): 200}


def test_eta_is_none_when_the_gpus_are_held_by_a_job_of_unknown_length():
    jobs = (
        running("r1", 2, "n1", (0, 1), None, order=1),
        running("r2", 2, "n1", (2, 3), None, order=2),
        Job("team-a", "p1", 2, order=3, expected_s=50),
    )
    snapshot = Snapshot((Node("n1", 4),), TEAM, jobs)
    assert estimate_starts(snapshot) == {("team-a", "p1"): None}


def test_eta_is_none_for_a_job_no_end_can_make_room_for():
    jobs = (*queue_snapshot().jobs, Job("team-a", "huge", 8, order=9))
    etas = estimate_starts(replace(queue_snapshot(), jobs=jobs))
    assert etas[("team-a", "huge")] is None
    assert etas[("team-a", "p2")] == 150


def test_eta_of_a_gang_waits_for_every_node_it_needs():
    """Two 4-GPU nodes free up at 100 and 200; a gang of 2 x 4 GPUs starts at 200."""
    nodes = (Node("n1", 4), Node("n2", 4))
    jobs = (
        running("r1", 4, "n1", range(4), 100, order=1),
        running("r2", 4, "n2", range(4), 200, order=2),
        Job("team-a", "gang", 4, pods=2, order=3, expected_s=10),
    )
    snapshot = Snapshot(nodes, TEAM, jobs)
    assert estimate_starts(snapshot) == {("team-a", "gang"): 200}
    assert estimate_starts(snapshot, horizon_s=150) == {("team-a", "gang"): None}


def test_eta_of_the_reserved_job_is_its_reservation_and_backfill_changes_who_waits():
    """Three 8-GPU nodes (test_backfill's base cluster): the gang's reservation at t=300 is its
    ETA; with backfill the long job waits for the gang to end (t=1300), under KAI it starts now
    and the gang still starts at 300 by reclaiming it (team-b has quota 0, R9)."""
    from tests.scheduler.test_backfill import BACKFILL, base

    snapshot = base()
    assert plan_cycle(snapshot, BACKFILL).reservations == {("team-a", "big"): 300}
    assert estimate_starts(snapshot, BACKFILL) == {
        ("team-a", "big"): 300,
        ("team-b", "short"): 50,
        ("team-b", "long4"): 1300,
        ("team-b", "side"): 50,
    }
    assert estimate_starts(snapshot, Policy())[("team-b", "long4")] == 50


def test_eta_is_pure_and_deterministic():
    snapshot = queue_snapshot()
    reordered = replace(snapshot, jobs=snapshot.jobs[::-1])
    assert estimate_starts(snapshot) == estimate_starts(reordered) == estimate_starts(snapshot)
    assert snapshot == queue_snapshot()


def test_lower_bounds_take_jobs_with_no_predictable_end_as_ending_now():
    """The "not before" of issue 24: r1 has outlived its group (infinite outlook), so p1's
    exact ETA is unknown; if r1 ended now, p1 would start now and p2 after p1's 50 s."""
    outlived = replace(queue_snapshot().jobs[0], expected_end=float("inf"))
    jobs = (outlived, running("r2", 2, "n1", (2, 3), None, order=2), *queue_snapshot().jobs[2:])
    snapshot = Snapshot((Node("n1", 4),), TEAM, jobs, now=500)
    assert estimate_starts(snapshot) == {("team-a", "p1"): None, ("team-a", "p2"): None}
    assert lower_bounds(snapshot) == {("team-a", "p1"): 500, ("team-a", "p2"): 500}
    # With r2 holding its GPUs for a known 1,000 s, p2 waits for p1 (50 s) instead.
    jobs = (outlived, running("r2", 2, "n1", (2, 3), 1500, order=2), *queue_snapshot().jobs[2:])
    snapshot = Snapshot((Node("n1", 4),), TEAM, jobs, now=500)
    assert lower_bounds(snapshot) == {("team-a", "p1"): 500, ("team-a", "p2"): 550}


def test_cannot_start_names_the_limit_the_quota_or_the_missing_node():
    """What no end can change: a total above the limit (R3.1), an interactive job above the
    quota (R3.2), a pod larger than every node of its pools (it waits for one to join)."""
    projects = (
        Project("capped", 8, limit=2),
        Project("small", 2),
        Project("pooled", 8, node_pools=("a100",)),
    )
    nodes = (Node("n1", 8), Node("a1", 2, pool="a100"))
    snapshot = Snapshot(nodes, projects)
    assert cannot_start(snapshot, Job("capped", "j", 3)) == (
        "cannot start: it asks for 3 GPUs, more than capped's limit of 2 GPUs (R3.1)"
    )
    assert cannot_start(snapshot, Job("small", "j", 3, type="interactive")) == (
        "cannot start: interactive jobs may not exceed small's quota (2 GPUs); this one asks "
        "for 3 GPUs (R3.2)"
    )
    assert cannot_start(snapshot, Job("small", "j", 3)) is None  # a train job may borrow
    assert cannot_start(snapshot, Job("pooled", "j", 4)) == (
        "cannot start until a node with 4 GPUs joins: the largest in a100 has 2 GPUs"
    )
    assert cannot_start(snapshot, Job("pooled", "j", 1, pods=4)) is None  # pods spread
