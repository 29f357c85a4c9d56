"""Minimum run time before eviction (R7.4, scheduler/minruntime.py, KAI's minruntime plugin).

The cluster: one 8-GPU node. team-a (quota 8) asks for the node while team-b (quota 0) borrows
all of it with a job that started 10 minutes ago (the snapshot's clock is at 10,000 s).
"""

from __future__ import annotations

import math

import pytest

from scheduler import Department, Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle
from scheduler.minruntime import check_min_runtime, parse_duration, protected_until

NOW = 10_000.0
NODE = (Node("n1", 8),)
WHOLE_NODE = (PodPlacement("n1", tuple(range(8))),)


def borrower(started=NOW - 600, project="team-b", name="long", **kw):
    return Job(project, name, 8, placement=WHOLE_NODE, started=started, order=1, **kw)


def asking(project="team-a", name="want", **kw):
    return Job(project, name, 8, order=2, **kw)


def teams(a=None, b=None, department_b=None):
    return (
        Project("team-a", 8, order=1, reclaim_min_runtime_s=a),
        Project("team-b", 0, order=2, reclaim_min_runtime_s=b, department=department_b),
    )


def plan(*jobs, projects=None, departments=(), **policy):
    snapshot = Snapshot(
        nodes=NODE,
        projects=projects or teams(),
        departments=departments,
        jobs=jobs,
        now=NOW,
    )
    return plan_cycle(snapshot, Policy(**policy))


def kinds(result):
    return {(d.kind, d.job[1]) for d in result.decisions}


# --------------------------------------------------------------------------- reclaim (R9)


def test_r7_4_default_0_reclaims_at_once_as_kai_does():
    result = plan(borrower(), asking())
    assert kinds(result) == {("evict", "long"), ("start", "want")}


def test_r7_4_a_cluster_reclaim_min_runtime_protects_a_young_job_and_says_until_when():
    result = plan(borrower(), asking(), reclaim_min_runtime_s=3600)
    assert result.decisions == ()
    reason = result.pending_reasons[("team-a", "want")]
    assert "1 running job of team-b that reclaim could take is within the minimum run time" in (
        reason
    )
    assert "the first can be taken in 50 min (R7.4)" in reason


def test_r7_4_once_the_min_runtime_has_passed_the_job_is_reclaimed():
    result = plan(borrower(started=NOW - 3600), asking(), reclaim_min_runtime_s=3600)
    assert kinds(result) == {("evict", "long"), ("start", "want")}


def test_r7_4_minus_1_protects_for_ever():
    result = plan(borrower(started=NOW - 10**7), asking(), reclaim_min_runtime_s=-1)
    assert result.decisions == ()
    assert "the first can be taken never (R7.4)" in result.pending_reasons[("team-a", "want")]


def test_r7_4_a_job_whose_start_is_unknown_is_not_protected():
    result = plan(borrower(started=None), asking(), reclaim_min_runtime_s=3600)
    assert ("evict", "long") in kinds(result)


def test_r7_4_the_victims_project_setting_overrides_the_cluster_default():
    protected = plan(borrower(), asking(), projects=teams(b=3600))
    assert protected.decisions == ()
    unprotected = plan(borrower(), asking(), projects=teams(b=0), reclaim_min_runtime_s=3600)
    assert ("evict", "long") in kinds(unprotected)


def test_r7_4_the_reclaimers_own_setting_does_not_protect_other_projects_jobs():
    result = plan(borrower(), asking(), projects=teams(a=3600))
    assert ("evict", "long") in kinds(result)


def _departments_case(same_department: bool):
    """team-b in department d1 with a 1-hour reclaim min runtime; team-b itself sets 0.
    team-a is in d1 too (siblings) or in d2."""
    departments = (
        Department("d1", 0, order=1, reclaim_min_runtime_s=3600),
        Department("d2", 8, order=2),
    )
    projects = (
        Project("team-a", 8, order=1, department="d1" if same_department else "d2"),
        Project("team-b", 0, order=2, department="d1", reclaim_min_runtime_s=0),
    )
    if same_department:
        departments = (Department("d1", 8, order=1, reclaim_min_runtime_s=3600),)
    return plan(borrower(), asking(), projects=projects, departments=departments)


def test_r7_4_between_departments_the_victims_department_setting_applies():
    """KAI's LCA method: one step below the lowest common ancestor on the victim's side is d1,
    whose 1 hour protects team-b's job from another department."""
    assert _departments_case(same_department=False).decisions == ()


def test_r7_4_between_sibling_projects_the_victim_projects_own_setting_applies():
    """Within d1 the levelled victim queue is team-b itself, which sets 0."""
    assert ("evict", "long") in kinds(_departments_case(same_department=True))


# --------------------------------------------------------------------------- preempt (R10)


def _own_team(**policy):
    """team-a holds its node with a train job; its interactive job wants the node (R10.2)."""
    train = borrower(project="team-a", name="train")
    notebook = Job("team-a", "nb", 8, type="interactive", order=3)
    projects = (Project("team-a", 8, order=1, preempt_min_runtime_s=policy.pop("own", None)),)
    return plan(train, notebook, projects=projects, **policy)


def test_r7_4_preempt_min_runtime_protects_a_young_job_from_its_own_project():
    assert kinds(_own_team()) == {("evict", "train"), ("start", "nb")}
    result = _own_team(preempt_min_runtime_s=1800)
    assert result.decisions == ()
    assert "that preemption could take" in result.pending_reasons[("team-a", "nb")]
    assert "in 20 min (R7.4)" in result.pending_reasons[("team-a", "nb")]


def test_r7_4_a_projects_preempt_setting_overrides_the_default_both_ways():
    assert _own_team(own=1800).decisions == ()
    assert ("evict", "train") in kinds(_own_team(own=0, preempt_min_runtime_s=1800))


def test_r7_4_reclaim_and_preempt_settings_are_separate():
    assert ("evict", "train") in kinds(_own_team(reclaim_min_runtime_s=-1))
    assert ("evict", "long") in kinds(plan(borrower(), asking(), preempt_min_runtime_s=-1))


# --------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("started", "value", "until"),
    [(100.0, 0, None), (None, 60, None), (100.0, 60, 160.0), (100.0, -1, math.inf)],
)
def test_r7_4_protected_until(started, value, until):
    assert protected_until(Job("p", "j", 1, started=started), value) == until


@pytest.mark.parametrize("value", [-2, -0.5, math.inf, math.nan, "60", True])
def test_r7_4_bad_values_name_the_setting(value):
    with pytest.raises(ValueError, match="reclaim_min_runtime_s"):
        check_min_runtime(value, "reclaim_min_runtime_s")


def test_r7_4_a_bad_project_value_names_the_project_and_field():
    projects = (Project("team-a", 8, order=1), Project("team-b", 0, preempt_min_runtime_s=-5))
    with pytest.raises(ValueError, match="team-b: preempt_min_runtime_s must be 0 or more"):
        plan(asking(), projects=projects)


def test_r7_4_a_bad_cluster_default_names_the_field():
    with pytest.raises(ValueError, match="reclaim_min_runtime_s must be a number"):
        plan(asking(), reclaim_min_runtime_s=math.inf)


@pytest.mark.parametrize(("text", "seconds"), [("90s", 90.0), ("12h", 43200.0), ("0", 0.0)])
def test_parse_duration_reads_lengths_of_time(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "zero"), [("never", True), ("-1", True), ("soon", True),
                                            ("0", False), ("0s", False)])  # fmt: skip
def test_parse_duration_refuses_never_negatives_and_a_forbidden_zero(text, zero):
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text, zero)
