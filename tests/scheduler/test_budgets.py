"""Spent hard budgets in the core (Allot's R20 rules, docs/budgets.md, scheduler/budgets.py):
a job held by its budget waits with the budget's reason; a job past a budget that lets its work
run preemptible starts only on idle GPUs and gives them back to any job within budget."""

from __future__ import annotations

from dataclasses import replace

from scheduler import Job, Node, PodPlacement, Project, Snapshot, plan_cycle, settle

TEAMS = (Project("team-a", 4), Project("team-b", 4))
NODES = (Node("n1", 8),)
HOLD = "project team-a's budget 'term' of 100 GPU-hours is spent"


def running(project: str, name: str, devices: tuple[int, ...], order: int, **extra) -> Job:
    placement = (PodPlacement("n1", devices),)
    return Job(project, name, len(devices), order=order, placement=placement, **extra)


def test_r20_2_a_job_held_by_its_spent_budget_waits_with_the_budget_reason():
    jobs = (Job("team-a", "next", 1, budget_hold=HOLD),)
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    assert plan.decisions == ()
    assert plan.pending_reasons[("team-a", "next")] == f"{HOLD} (R20.2)"


def test_r20_2_a_held_job_is_not_the_beneficiary_of_reclaim():
    # team-b borrows all 8 GPUs; team-a's job within quota would reclaim but its budget holds it
    jobs = (
        running("team-b", "big", tuple(range(8)), 0),
        Job("team-a", "next", 4, order=1, budget_hold=HOLD),
    )
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    assert plan.decisions == ()
    assert plan.pending_reasons[("team-a", "next")] == f"{HOLD} (R20.2)"
    free = plan_cycle(Snapshot(NODES, TEAMS, (jobs[0], replace(jobs[1], budget_hold=None))))
    assert [d.kind for d in free.decisions] == ["evict", "start"]  # reclaim, without the budget


def test_r20_3_a_job_past_its_budget_starts_on_idle_gpus_as_preemptible_work():
    jobs = (Job("team-a", "next", 2, over_budget=HOLD),)
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    assert [(d.kind, d.job) for d in plan.decisions] == [("start", ("team-a", "next"))]


def test_r20_3_a_job_past_its_budget_does_not_reclaim_and_says_why():
    jobs = (
        running("team-b", "big", tuple(range(8)), 0),
        Job("team-a", "next", 4, order=1, over_budget=HOLD),
    )
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    assert plan.decisions == ()
    reason = plan.pending_reasons[("team-a", "next")]
    assert f"past its budget ({HOLD}) it runs only on idle GPUs" in reason
    assert reason.endswith("(R20.3)")


def test_r20_3_an_interactive_job_past_a_preemptible_budget_waits():
    jobs = (Job("team-a", "nb", 1, type="interactive", over_budget=HOLD),)
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    assert plan.decisions == ()
    assert (
        "cannot run as preemptible over-quota work (R20.3)"
        in plan.pending_reasons[("team-a", "nb")]
    )


def test_r20_4_a_job_within_budget_takes_gpus_from_work_past_its_budget_newest_first():
    # team-a, within its quota of 4, runs 2 + 2 GPUs past its budget and team-b fills the rest;
    # team-b's new job (over its own quota: no reclaim right) still takes the newer one's GPUs.
    jobs = (
        running("team-a", "old", (0, 1), 0, over_budget=HOLD),
        running("team-a", "new", (2, 3), 1, over_budget=HOLD),
        running("team-b", "b-1", (4, 5, 6, 7), 2),
        Job("team-b", "b-2", 2, order=3),
    )
    plan = plan_cycle(Snapshot(NODES, TEAMS, jobs))
    evicted = [d for d in plan.decisions if d.kind == "evict"]
    assert [d.job for d in evicted] == [("team-a", "new")]
    assert evicted[0].action == "budget"
    assert evicted[0].reason.endswith("team-b/b-2 within budget takes its GPUs (R20.4)")
    assert [d.job for d in plan.decisions if d.kind == "start"] == [("team-b", "b-2")]
    without = tuple(replace(job, over_budget=None) for job in jobs)
    assert plan_cycle(Snapshot(NODES, TEAMS, without)).decisions == ()


def test_r20_4_settles_with_the_within_budget_job_running():
    jobs = (
        running("team-a", "spent", tuple(range(8)), 0, over_budget=HOLD),
        Job("team-a", "mine", 8, order=1),
    )
    final, _ = settle(Snapshot(NODES, TEAMS, jobs))
    state = {job.name: job.running for job in final.jobs}
    assert state == {"spent": False, "mine": True}
