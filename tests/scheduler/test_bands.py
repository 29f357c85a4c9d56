"""Service bands (Policy.service_bands): Allot's L1-L3, least attained service first inside a
project (scheduler/bands.py).

The cluster: one 8-GPU node; team-a (quota 8) and team-b (quota 0). Bands at 1 and 10 GPU-hours:
a job that has held under 1 GPU-hour is in band 0, from 1 in band 1, from 10 in band 2.
"""

from __future__ import annotations

import pytest

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.bands import band_of, check_bands
from scheduler.session import Session

HOUR = 3600.0
BANDS = Policy(service_bands=(1.0, 10.0), band_preemption=True)  # L1-L3 (kai-las)
KAI = Policy(service_bands=())  # KAI's own order: priority, then age
ORDER_ONLY = Policy(service_bands=(1.0, 10.0), band_preemption=False)  # L1, L2: Allot's default
NODE = (Node("n1", 8),)
TEAMS = (Project("team-a", 8, order=1), Project("team-b", 0, order=2))


def running(name, gpus, devices, held_h, project="team-a", order=0, **kw):
    """A job running on n1 that has held `held_h` GPU-hours so far."""
    placement = (PodPlacement("n1", tuple(devices)),)
    return Job(
        project, name, gpus, placement=placement, order=order, attained_gpu_s=held_h * HOUR, **kw
    )


def snapshot(*jobs, teams=TEAMS):
    return Snapshot(nodes=NODE, projects=teams, jobs=jobs, now=1000.0)


def starts(plan):
    return {d.job[1] for d in plan.decisions if d.kind == "start"}


def evictions(plan):
    return {d.job[1]: d.reason for d in plan.decisions if d.kind == "evict"}


# ------------------------------------------------------------------------------------ L1


@pytest.mark.parametrize(
    ("held_h", "band"), [(0, 0), (0.99, 0), (1.0, 1), (9.99, 1), (10.0, 2), (500, 2)]
)
def test_l1_a_jobs_band_counts_the_thresholds_its_gpu_hours_reached(held_h, band):
    job = Job("team-a", "j", 1, attained_gpu_s=held_h * HOUR)
    assert band_of(job, (1.0, 10.0)) == band


def test_l1_interactive_jobs_stay_in_band_0_whatever_they_held():
    notebook = Job("team-a", "nb", 1, type="interactive", attained_gpu_s=100 * HOUR)
    assert band_of(notebook, (1.0, 10.0)) == 0


def test_l1_without_bands_every_job_is_band_0_even_if_the_snapshot_says_otherwise():
    session = Session(snapshot(Job("team-a", "j", 1, band=3, attained_gpu_s=50 * HOUR)), KAI)
    assert [j.band for j in session.jobs] == [0]


def test_l1_the_core_derives_the_band_from_attained_service_not_from_the_snapshot():
    session = Session(snapshot(Job("team-a", "j", 1, band=0, attained_gpu_s=12 * HOUR)), BANDS)
    assert [j.band for j in session.jobs] == [2]


@pytest.mark.parametrize(
    "bands", [(0.0, 1.0), (10.0, 1.0), (1.0, 1.0), (-1.0,), (1.0, float("inf"))]
)
def test_l1_thresholds_must_be_positive_and_ascending(bands):
    check_bands((1.0, 10.0))
    with pytest.raises(ValueError, match="service_bands must be positive GPU-hours"):
        check_bands(bands)
    with pytest.raises(ValueError, match="service_bands"):
        plan_cycle(snapshot(Job("team-a", "j", 1)), Policy(service_bands=bands))


# ------------------------------------------------------------------------------------ L2


@pytest.mark.parametrize("policy", [BANDS, ORDER_ONLY], ids=["with L3", "without L3"])
def test_l2_inside_a_project_the_lower_band_is_served_before_the_older_job(policy):
    # 7 of 8 GPUs busy with a job that is about to end nowhere; one GPU free. `old` (order 1)
    # was evicted after 3 GPU-hours (band 1); `new` (order 2) has held nothing (band 0).
    jobs = (
        running("busy", 7, range(7), 0.5, order=0),
        Job("team-a", "old", 1, order=1, attained_gpu_s=3 * HOUR),
        Job("team-a", "new", 1, order=2),
    )
    assert starts(plan_cycle(snapshot(*jobs), policy)) == {"new"}
    assert starts(plan_cycle(snapshot(*jobs), KAI)) == {"old"}  # KAI: older first (R4.3)


def test_l2_bands_do_not_reorder_priority_classes():
    # A train job of priority 5 outranks a band-0 train job of priority 0 even in band 2.
    jobs = (
        running("busy", 7, range(7), 0.5, order=0),
        Job("team-a", "urgent", 1, order=1, priority=5, attained_gpu_s=20 * HOUR),
        Job("team-a", "new", 1, order=2),
    )
    assert starts(plan_cycle(snapshot(*jobs), BANDS)) == {"urgent"}


@pytest.mark.parametrize("policy", [BANDS, ORDER_ONLY], ids=["with L3", "without L3"])
def test_l2_reclaim_takes_the_highest_band_of_the_over_served_project_first(policy):
    # team-b borrowed all 8 GPUs with two 4-GPU jobs: `veteran` (older, 30 GPU-hours, band 2)
    # and `fresh` (newer, 0.2 GPU-hours, band 0). team-a asks 4 within its quota: KAI's R8.1
    # takes the newest (`fresh`); with bands the highest band goes first (L2), with or without
    # L3, and the reason says why.
    jobs = (
        running("veteran", 4, range(4), 30, project="team-b", order=1),
        running("fresh", 4, range(4, 8), 0.2, project="team-b", order=2),
        Job("team-a", "mine", 4, order=3),
    )
    reasons = evictions(plan_cycle(snapshot(*jobs), policy))
    assert set(reasons) == {"veteran"}
    assert reasons["veteran"].endswith(
        "(R9.4); veteran has held 30.0 GPU-h (service band 2), and a team's jobs that have held "
        "the most GPU-hours are taken first (L2)"
    )
    kai = evictions(plan_cycle(snapshot(*jobs), KAI))
    assert set(kai) == {"fresh"} and "(L2)" not in kai["fresh"]


def test_l2_queue_order_between_projects_ignores_bands():
    teams = (Project("team-a", 4, order=1), Project("team-b", 4, order=2))
    jobs = (
        Job("team-a", "a-long", 8, order=1, attained_gpu_s=50 * HOUR),
        Job("team-b", "b-new", 8, order=2),
    )
    with_bands = plan_cycle(snapshot(*jobs, teams=teams), BANDS)
    without = plan_cycle(snapshot(*jobs, teams=teams), KAI)
    assert starts(with_bands) == starts(without) == {"a-long"}
    assert with_bands.fair_shares == without.fair_shares


# ------------------------------------------------------------------------------------ L3


def test_l3_a_new_job_preempts_its_teams_job_that_has_held_the_most_gpu_hours():
    # team-a holds the node with two 4-GPU jobs of 12 (band 2) and 3 GPU-hours (band 1); a new
    # 4-GPU job (band 0) of team-a preempts the band-2 one, and the reason says why.
    jobs = (
        running("week", 4, range(4), 12, order=1),
        running("day", 4, range(4, 8), 3, order=2),
        Job("team-a", "quick", 4, order=3),
    )
    plan = plan_cycle(snapshot(*jobs), BANDS)
    assert evictions(plan) == {
        "week": "preempted: quick of team-a has held fewer GPU-hours (service band 0 < 2; this "
        "job has held 12.0 GPU-h) (L3, R10.2)"
    }
    assert plan_cycle(snapshot(*jobs), KAI).decisions == ()  # KAI: quick waits


def test_l3_jobs_of_the_same_band_do_not_preempt_each_other():
    jobs = (
        running("a", 4, range(4), 3, order=1),
        running("b", 4, range(4, 8), 2, order=2),
        Job("team-a", "evicted-before", 4, order=3, attained_gpu_s=1.5 * HOUR),
    )
    assert plan_cycle(snapshot(*jobs), BANDS).decisions == ()


def test_l3_interactive_jobs_are_never_preempted_by_bands():
    jobs = (
        running("notebook", 8, range(8), 40, order=1, type="interactive"),
        Job("team-a", "quick", 4, order=2),
    )
    assert plan_cycle(snapshot(*jobs), BANDS).decisions == ()


def test_l3_other_projects_jobs_are_not_preempted_by_bands():
    # team-b's band-2 job runs within team-b's quota; team-a's band-0 job cannot preempt it
    # (R10.2: same project only) nor reclaim it (team-b is not over its quota, R9).
    teams = (Project("team-a", 4, order=1), Project("team-b", 4, order=2))
    jobs = (
        running("a-own", 4, range(4), 0.1, order=1),
        running("b-long", 4, range(4, 8), 90, project="team-b", order=2),
        Job("team-a", "a-new", 4, order=3),
    )
    assert plan_cycle(snapshot(*jobs, teams=teams), BANDS).decisions == ()


# ------------------------------------------------------------ L3 off (Policy.band_preemption)


def test_allots_default_is_bands_at_1_and_10_gpu_hours_without_l3():
    assert Policy() == ORDER_ONLY


def test_l3_off_a_new_job_waits_instead_of_preempting_its_teams_long_run():
    jobs = (
        running("week", 4, range(4), 12, order=1),
        running("day", 4, range(4, 8), 3, order=2),
        Job("team-a", "quick", 4, order=3),
    )
    assert plan_cycle(snapshot(*jobs), ORDER_ONLY).decisions == ()
    assert set(evictions(plan_cycle(snapshot(*jobs), BANDS))) == {"week"}  # with L3


def test_l3_off_a_higher_priority_class_still_preempts_r10_2():
    jobs = (
        running("week", 8, range(8), 12, order=1),
        Job("team-a", "notebook", 8, order=2, type="interactive"),
    )
    plan = plan_cycle(snapshot(*jobs), ORDER_ONLY)
    assert evictions(plan) == {
        "week": "preempted: notebook of team-a has higher priority (100 > 50) (R10.2); week has "
        "held 12.0 GPU-h (service band 2), and a team's jobs that have held the most GPU-hours "
        "are taken first (L2)"
    }
