"""Per-user limits inside a project, enforced in the scheduling core (issue 36, R21.1-R21.3).

A job that would take its user past the project's per-user limit (GPUs held, running jobs,
interactive sessions; project default or that user's override) waits with a reason naming the
limit, while a teammate's job starts on the GPUs it leaves.
"""

from __future__ import annotations

from scheduler import Job, Node, Project, Snapshot, plan_cycle
from scheduler.model import UserLimit

NODES = (Node("n1", 8), Node("n2", 8))


def _started(plan) -> set[str]:
    return {d.job[1] for d in plan.decisions if d.kind == "start"}


def test_r21_1_per_user_gpu_limit_keeps_ten_jobs_to_two_while_teammate_starts():
    team = Project("team-a", 16, user_limits=(UserLimit(max_gpus=2),))
    jobs = tuple(Job("team-a", f"ann-{i}", 1, user="ann", order=i) for i in range(10))
    jobs += (Job("team-a", "bob-0", 1, user="bob", order=10),)
    plan = plan_cycle(Snapshot(NODES, (team,), jobs))
    assert _started(plan) == {"ann-0", "ann-1", "bob-0"}
    reason = plan.pending_reasons[("team-a", "ann-2")]
    assert "ann's per-user GPU limit of 2 GPUs in team-a" in reason and "(R21.1)" in reason


def test_r21_1_override_beats_project_default():
    team = Project(
        "team-a", 16, user_limits=(UserLimit(max_gpus=2), UserLimit(user="ann", max_gpus=3))
    )
    jobs = tuple(Job("team-a", f"ann-{i}", 1, user="ann", order=i) for i in range(5))
    jobs += tuple(Job("team-a", f"bob-{i}", 1, user="bob", order=5 + i) for i in range(5))
    plan = plan_cycle(Snapshot(NODES, (team,), jobs))
    assert _started(plan) == {"ann-0", "ann-1", "ann-2", "bob-0", "bob-1"}


def test_r21_2_running_jobs_limit_counts_jobs_already_running():
    team = Project("team-a", 16, user_limits=(UserLimit(max_running=1),))
    running = Job("team-a", "ann-0", 1, user="ann", placement=(_on("n1", 0),))
    jobs = (running, Job("team-a", "ann-1", 1, user="ann", order=1))
    plan = plan_cycle(Snapshot(NODES, (team,), jobs))
    assert _started(plan) == set()
    assert "running-jobs limit of 1" in plan.pending_reasons[("team-a", "ann-1")]
    assert "(R21.2)" in plan.pending_reasons[("team-a", "ann-1")]


def test_r21_3_interactive_sessions_limit_leaves_training_alone():
    team = Project("team-a", 16, user_limits=(UserLimit(max_interactive=1),))
    jobs = (
        Job("team-a", "nb-0", 1, type="interactive", user="ann", order=0),
        Job("team-a", "nb-1", 1, type="interactive", user="ann", order=1),
        Job("team-a", "train", 1, user="ann", order=2),
    )
    plan = plan_cycle(Snapshot(NODES, (team,), jobs))
    assert _started(plan) == {"nb-0", "train"}
    assert "interactive-sessions limit of 1" in plan.pending_reasons[("team-a", "nb-1")]


def test_r21_no_user_limits_changes_nothing():
    team = Project("team-a", 16)
    jobs = tuple(Job("team-a", f"ann-{i}", 1, user="ann", order=i) for i in range(10))
    assert len(_started(plan_cycle(Snapshot(NODES, (team,), jobs)))) == 10


def _on(node, *devices):
    from scheduler import PodPlacement

    return PodPlacement(node, devices, 1.0)


def test_r21_1_a_job_over_its_user_limit_does_not_reclaim():
    """The limit is checked where every action places a job: ann, at her limit of 2 GPUs in
    team-a, does not reclaim team-b's over-quota GPUs, though team-a is under its quota."""
    team_a = Project("team-a", 8, user_limits=(UserLimit(max_gpus=2),))
    team_b = Project("team-b", 0)
    held = tuple(
        Job("team-a", f"ann-{i}", 1, user="ann", order=i, placement=(_on("n1", i),))
        for i in range(2)
    )
    borrowed = tuple(
        Job("team-b", f"b-{i}", 1, order=10 + i, placement=(_on(n, d),))
        for i, (n, d) in enumerate([("n1", d) for d in range(2, 8)] + [("n2", d) for d in range(8)])
    )
    waiting = Job("team-a", "ann-2", 1, user="ann", order=30)
    plan = plan_cycle(Snapshot(NODES, (team_a, team_b), held + borrowed + (waiting,)))
    assert not [d for d in plan.decisions if d.kind == "evict"]
    assert "(R21.1)" in plan.pending_reasons[("team-a", "ann-2")]


def test_r21_bad_user_limits_in_a_scenario_are_refused_naming_the_field():
    from scheduler_tools.scenario import ScenarioError, parse_scenario

    def scenario(limits):
        return {
            "name": "x",
            "nodes": [{"name": "n1", "gpus": 2}],
            "projects": [{"name": "team-a", "quota": 2, "user_limits": limits}],
            "steps": [],
        }

    for limits, message in (
        ([{"max_gpus": -1}], "projects[0].user_limits[0].max_gpus"),
        ([{"max_running": 1.5}], "projects[0].user_limits[0].max_running: must be a whole"),
        ([{"max_pods": 1}], "projects[0].user_limits[0]: unknown field(s) max_pods"),
    ):
        try:
            parse_scenario(scenario(limits))
        except ScenarioError as error:
            assert message in str(error)
        else:
            raise AssertionError(f"{limits} was accepted")
