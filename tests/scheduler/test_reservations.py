"""Reservations in the core (R22, docs/reservations.md): the booking check, the weekly
expansion, the stand-in, and the cycle's rules beyond the scenario files."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from scheduler.cycle import plan_cycle, settle
from scheduler.model import Job, Node, PodPlacement, Project, Reservation, Snapshot
from scheduler.reservations import check, refusal, stand_in, weekly

PARIS = ZoneInfo("Europe/Paris")


def booking(name="lab", project="b", gpus=8, start=3600.0, end=7200.0, **kw) -> Reservation:
    return Reservation(name=name, project=project, gpus=gpus, start=start, end=end, **kw)


def running(project, name, gpus, node="n1", devices=None, started=0.0, **kw) -> Job:
    devices = tuple(range(gpus)) if devices is None else devices
    return Job(project, name, float(gpus), placement=(PodPlacement(node, devices),),
               started=started, **kw)  # fmt: skip


PROJECTS = (Project("a", quota=8), Project("b", quota=0, over_quota_weight=1))


# ------------------------------------------------------------------------------ R22.1
def test_r22_1_a_booking_over_its_pool_s_gpus_is_refused_naming_gpus():
    nodes = (Node("n1", 8, pool="a100"),)
    found = refusal(booking(gpus=9, pool="a100"), [], nodes)
    assert found.field == "gpus"
    assert "pool 'a100' has 8 GPUs, fewer than 9 (R22.1)" in found.reason


def test_r22_1_a_booking_on_a_pool_without_nodes_is_refused_naming_pool():
    found = refusal(booking(pool="h100"), [], (Node("n1", 8),))
    assert (found.field, found.reason) == ("pool", "no node is in pool 'h100' (R22.1)")


def test_r22_1_back_to_back_slots_do_not_overlap():
    nodes = (Node("n1", 8),)
    first = booking("first", start=0, end=3600)
    assert refusal(booking("second", start=3600, end=7200), [first], nodes) is None
    assert refusal(booking("third", start=3599, end=7200), [first], nodes).field == "gpus"


def test_r22_1_the_peak_inside_the_slot_counts_not_only_its_start():
    nodes = (Node("n1", 8),)
    booked = [booking("early", gpus=4, start=0, end=1000), booking("late", gpus=4, start=5000)]
    found = refusal(booking("new", gpus=5, start=500, end=6000), booked, nodes)
    assert found is not None and "'early'" in found.reason
    found = refusal(booking("new", gpus=4, start=1000, end=6000), booked, nodes)
    assert found is None


def test_r22_1_whole_nodes_need_one_node_size_that_divides_the_gpus():
    mixed = (Node("n1", 8, pool="p"), Node("n2", 4, pool="p"))
    found = refusal(booking(gpus=8, pool="p", whole_nodes=True), [], mixed)
    assert found.field == "whole_nodes" and "differ in size (4, 8 GPUs)" in found.reason
    same = (Node("n1", 8, pool="p"), Node("n2", 8, pool="p"))
    assert refusal(booking(gpus=16, pool="p", whole_nodes=True), [], same) is None


def test_r22_1_an_occurrence_with_no_gpus_or_an_end_before_its_start_is_refused_by_the_core():
    with pytest.raises(ValueError, match="gpus must be a whole number of at least 1"):
        check(booking(gpus=0))
    with pytest.raises(ValueError, match="end must be after start"):
        plan_cycle(Snapshot((Node("n1", 8),), PROJECTS, reservations=(booking(end=3600.0),)))


def test_r22_1_the_stand_in_is_one_gpu_pods_or_whole_nodes_with_their_share_of_cpu():
    job = stand_in(booking(gpus=6, cpu_millis=6001))
    assert (job.pods, job.gpus, job.cpu_millis) == (6, 1.0, 1001)
    job = stand_in(booking(gpus=16, whole_nodes=True), per_node=8)
    assert (job.pods, job.gpus) == (2, 8.0)


def test_r22_1_weekly_occurrences_keep_their_wall_clock_across_summer_time():
    start = datetime(2026, 10, 20, 14, 0, tzinfo=PARIS)  # a Tuesday, summer time
    got = weekly(start, start + timedelta(hours=3), None, start, start + timedelta(days=15))
    assert [(s.hour, s.day, s.utcoffset()) for s, _ in got] == [
        (14, 20, timedelta(hours=2)),
        (14, 27, timedelta(hours=1)),  # winter time from 25 October
        (14, 3, timedelta(hours=1)),
    ]


def test_r22_1_weekly_stops_at_until_and_skips_weeks_before_the_window():
    start = datetime(2026, 1, 6, 14, 0, tzinfo=PARIS)
    since = start + timedelta(weeks=10, hours=1)  # inside the 11th occurrence
    got = weekly(start, start + timedelta(hours=3), start + timedelta(weeks=12), since,
                 since + timedelta(weeks=5))  # fmt: skip
    assert [s for s, _ in got] == [start + timedelta(weeks=10), start + timedelta(weeks=11)]


# ------------------------------------------------------------------------------ R22.2
def test_r22_2_another_project_s_job_uses_gpus_the_reservation_does_not_need():
    nodes = (Node("n1", 8),)
    snapshot = Snapshot(nodes, PROJECTS, (Job("a", "small", 4.0),),
                        reservations=(booking(gpus=4),))  # fmt: skip
    plan = plan_cycle(snapshot)
    assert [d.kind for d in plan.decisions] == ["start"]
    assert "uses GPUs b's reservation 'lab' does not need (R22.2)" in plan.decisions[0].reason


def test_r22_2_the_project_s_own_jobs_start_ahead_of_its_slot_and_count_inside_it():
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, (Job("b", "early", 8.0),),
                        reservations=(booking(),))  # fmt: skip
    assert plan_cycle(snapshot).decisions[0].kind == "start"


def test_r22_2_a_job_ending_before_t1_frees_room_for_a_long_one_only_after_t1():
    """A job running now that ends by T1 is not on the pool at T1: a long job of another
    project may use the GPUs it leaves beside the reservation."""
    jobs = (running("a", "ends", 4, expected_s=1800), Job("a", "long", 4.0, expected_s=10**6))
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, jobs, reservations=(booking(gpus=4),))
    plan = plan_cycle(snapshot)
    assert [(d.kind, d.job) for d in plan.decisions] == [("start", ("a", "long"))]


def test_r22_2_a_reservation_on_another_pool_holds_nothing_back():
    nodes = (Node("n1", 8, pool="x"), Node("n2", 8, pool="y"))
    snapshot = Snapshot(nodes, PROJECTS, (Job("a", "long", 8.0),),
                        reservations=(booking(pool="y"),))  # fmt: skip
    plan = plan_cycle(snapshot)
    assert plan.decisions[0].placement[0].node == "n1"
    assert plan.decisions[0].reason == "started on n1: free GPUs (R4.4)"


# ------------------------------------------------------------------------------ R22.3
def test_r22_3_inside_the_slot_the_project_s_jobs_go_to_the_reserved_pool_first():
    nodes = (Node("a1", 8, pool="a"), Node("z1", 8, pool="z"))
    snapshot = Snapshot(nodes, PROJECTS, (Job("b", "train", 4.0),), now=3600.0,
                        reservations=(booking(pool="z"),))  # fmt: skip
    decision = plan_cycle(snapshot).decisions[0]
    assert decision.placement[0].node == "z1" and decision.action == "reservation"


def test_r22_3_the_project_takes_no_more_than_its_reserved_gpus_by_the_reservation():
    """Beyond the reserved GPUs the project is one more project: team-b's quota of 0 gives
    it nothing team-a's quota covers."""
    jobs = (running("a", "holder", 8, started=0.0, node="n2"), Job("b", "one", 4.0),
            Job("b", "two", 4.0))  # fmt: skip
    nodes = (Node("n1", 4), Node("n2", 8))
    snapshot = Snapshot(nodes, PROJECTS, jobs, now=3600.0, reservations=(booking(gpus=4),))
    final, _ = settle(snapshot)
    state = {j.name: j.running for j in final.jobs}
    assert state == {"holder": True, "one": True, "two": False}


def test_r22_3_work_there_before_the_slot_is_taken_before_lent_work_and_no_more_than_needed():
    jobs = (running("a", "old", 2, devices=(0, 1), started=0.0),
            running("a", "lent", 4, devices=(2, 3, 4, 5), started=4000.0),
            Job("b", "train", 4.0))  # fmt: skip
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, jobs, now=5000.0,
                        reservations=(booking(),))  # fmt: skip
    plan = plan_cycle(snapshot)
    evicted = [d.job for d in plan.decisions if d.kind == "evict"]
    assert evicted == [("a", "old")]  # 2 idle + 2 freed: enough for 4 GPUs; "lent" stays
    assert "(R22.3)" in plan.decisions[0].reason


def test_r22_3_nothing_is_evicted_while_the_project_has_nothing_waiting():
    jobs = (running("a", "holder", 8, started=0.0),)
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, jobs, now=3600.0, reservations=(booking(),))
    assert plan_cycle(snapshot).empty


def test_r22_3_interactive_jobs_are_never_taken_for_a_reservation():
    jobs = (running("a", "notebook", 8, type="interactive"), Job("b", "train", 8.0))
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, jobs, now=3600.0, reservations=(booking(),))
    assert plan_cycle(snapshot).empty


def test_r22_3_an_ended_reservation_takes_nothing_back():
    jobs = (running("a", "holder", 8), Job("b", "train", 8.0))
    snapshot = Snapshot((Node("n1", 8),), PROJECTS, jobs, now=7200.0, reservations=(booking(),))
    assert plan_cycle(snapshot).empty
