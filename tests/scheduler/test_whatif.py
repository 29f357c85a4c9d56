"""The what-if (scheduler/whatif.py, issue 37): the scheduler run forward from one snapshot
without and with a change gives each pending job's start before and after, each project's GPUs
over time and the running jobs the change stops now."""

from __future__ import annotations

import random

import pytest

from scheduler import Job, Node, PodPlacement, Project, Reservation, Snapshot
from scheduler.actions import eviction
from scheduler.whatif import AddJob, AddReservation, NodeChange, ProjectChange, what_if


def running(project, name, gpus, node, devices, expected, order):
    placement = (PodPlacement(node, tuple(devices)),)
    return Job(project, name, gpus, placement=placement, started=0.0, expected_s=expected,
               order=order)  # fmt: skip


def queue_only() -> Snapshot:
    """One 4-GPU node, nothing running; team-b's b1 and b2 (2 GPUs, 100 s) queued before
    team-a's a1 (2 GPUs, 100 s). team-a has no quota, so team-b takes the node first."""
    projects = (Project("team-a", 0, order=1), Project("team-b", 2, order=2))
    jobs = (
        Job("team-b", "b1", 2, order=1, expected_s=100),
        Job("team-b", "b2", 2, order=2, expected_s=100),
        Job("team-a", "a1", 2, order=3, expected_s=100),
    )
    return Snapshot((Node("n1", 4),), projects, jobs, now=10.0)


def test_a_quota_raise_moves_its_project_earlier_and_another_later():
    result = what_if(queue_only(), [ProjectChange("team-a", {"quota": 2})])
    before, after = result.before.starts, result.after.starts
    assert before[("team-a", "a1")] == 110 and after[("team-a", "a1")] == 10
    assert before[("team-b", "b2")] == 10 and after[("team-b", "b2")] == 110
    assert before[("team-b", "b1")] == after[("team-b", "b1")] == 10
    assert result.stopped == {}


def test_a_booking_of_the_whole_node_holds_back_work_that_would_overrun_its_start():
    """team-a books the 4 GPUs from t=60: team-b's 100 s jobs would still run at 60, so they
    wait until team-a's a1 has had the node (R22.2); without the booking they start now."""
    booking = Reservation("lab", "team-a", 4, start=60.0, end=1000.0)
    result = what_if(queue_only(), [AddReservation(booking)], horizon_s=3000)
    before, after = result.before.starts, result.after.starts
    assert before[("team-b", "b1")] == 10 and after[("team-b", "b1")] == 110
    assert before[("team-a", "a1")] == 110 and after[("team-a", "a1")] == 10
    assert result.stopped == {}


def test_a_booking_over_already_or_named_twice():
    over = Reservation("old", "team-a", 4, start=0.0, end=5.0)
    result = what_if(queue_only(), [AddReservation(over)])
    assert result.after.starts == result.before.starts
    twice = [AddReservation(Reservation("lab", "team-a", 1, 60.0, 90.0))] * 2
    with pytest.raises(ValueError, match="a reservation named 'lab' is there already"):
        what_if(queue_only(), twice)
    with pytest.raises(ValueError, match="no project named 'team-z'"):
        what_if(queue_only(), [AddReservation(Reservation("z", "team-z", 1, 60.0, 90.0))])


def test_the_series_gives_each_projects_gpus_over_time():
    result = what_if(queue_only(), [ProjectChange("team-a", {"quota": 2})])
    assert result.before.series[0] == (10.0, {"team-a": 0.0, "team-b": 4.0})
    assert result.after.series[0] == (10.0, {"team-a": 2.0, "team-b": 2.0})
    assert [at for at, _ in result.after.series] == sorted(at for at, _ in result.after.series)


def two_nodes() -> Snapshot:
    projects = (Project("team-a", 4, order=1),)
    jobs = (
        running("team-a", "r1", 2, "n1", (0, 1), 3600, order=1),
        running("team-a", "r2", 2, "n2", (0, 1), 3600, order=2),
    )
    return Snapshot((Node("n1", 2), Node("n2", 2)), projects, jobs, now=0.0)


def test_a_drain_lists_the_jobs_it_would_stop_now():
    result = what_if(two_nodes(), [NodeChange("n1", "drain")])
    assert list(result.stopped) == [("team-a", "r1")]
    assert "n1 is drained" in result.stopped[("team-a", "r1")]
    assert result.before.stopped == {}
    # r1 waits for r2's GPUs (n1 is cordoned): it starts again when r2 ends.
    assert result.after.starts[("team-a", "r1")] == 3600


def test_a_cordon_stops_nothing():
    assert what_if(two_nodes(), [NodeChange("n1", "cordon")]).stopped == {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (ProjectChange("team-z", {"quota": 2}), "no project named 'team-z'"),
        (ProjectChange("team-a", {"quota": -1}), "quota must be 0 or more GPUs, not -1"),
        (ProjectChange("team-a", {"limit": float("nan")}), "limit must be 0 or more GPUs"),
        (ProjectChange("team-a", {"quota": None}), "quota must be a number of GPUs"),
        (ProjectChange("team-a", {"gpus": 2}), "a project change sets only quota"),
        (NodeChange("n9", "drain"), "no node named 'n9'"),
        (AddJob(Job("team-z", "x", 1)), "no project named 'team-z'"),
        (AddJob(Job("team-a", "r1", 1)), "a job named 'r1' is in team-a already"),
    ],
)
def test_a_bad_change_raises_a_clear_error(change, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        what_if(two_nodes(), [change])


def crowded(nodes: int, teams: int, seed=3) -> Snapshot:
    """A full cluster of mixed 1/2/4-GPU jobs over `teams` projects and a queue with 8-GPU jobs: a
    quota raise makes one project reclaim, and its searches over every victim fail."""
    rng = random.Random(seed)
    node_list = tuple(Node(f"node-{i:03d}", 8) for i in range(nodes))
    projects = tuple(Project(f"p{i}", nodes * 8 / teams, order=i) for i in range(teams))
    jobs, slot = [], 0
    while slot < nodes * 8:
        size = min(rng.choice((1, 2, 4)), 8 - slot % 8)
        jobs.append(running(f"p{len(jobs) % teams}", f"r{len(jobs)}", size,
                            node_list[slot // 8].name, range(slot % 8, slot % 8 + size),
                            rng.uniform(600, 6 * 3600), order=len(jobs)))  # fmt: skip
        slot += size
    for i in range(len(jobs)):
        jobs.append(Job(f"p{i % teams}", f"q{i}", rng.choice((1, 2, 4, 8)), order=len(jobs) + i,
                        expected_s=rng.uniform(600, 6 * 3600)))  # fmt: skip
    return Snapshot(node_list, projects, tuple(jobs), now=100.0)


def test_a_quota_raise_tries_a_bounded_number_of_eviction_scenarios(monkeypatch):
    """Unbounded, one failing reclaim search simulates growing scenarios over every candidate
    (a quota raise at 4,000 jobs ran 4,930 s): each search stops after 16 candidates."""
    calls = []
    simulate = eviction.simulate
    monkeypatch.setattr(eviction, "simulate", lambda *a: calls.append(1) or simulate(*a))
    what_if(crowded(40, teams=20), [ProjectChange("p0", {"quota": 48})])
    assert 0 < len(calls) <= 1500, len(calls)  # 4,490 unbounded
