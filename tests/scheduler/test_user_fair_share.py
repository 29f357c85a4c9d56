"""Fair share between the users of a project (issue 36, R21.4-R21.8, docs/user-fairness.md).

The scenario files r21_4_* and r21_5_* replay the issue's acceptance cases; these tests pin the
rules a scenario shows less directly: who counts as active, the order inside a project, whose
jobs another project's reclaim takes, and that preemption stays inside one user.
"""

from __future__ import annotations

import pytest

from scheduler.cycle import plan_cycle, settle
from scheduler.model import Job, Node, PodPlacement, Project, Snapshot
from scheduler_tools.scenario import ScenarioError, parse_scenario


def running(project, name, user, node, device, order, **kw) -> Job:
    return Job(project, name, 1, user=user, order=order,
               placement=(PodPlacement(node, (device,)),), **kw)  # fmt: skip


def pending(project, name, user, order, **kw) -> Job:
    return Job(project, name, 1, user=user, order=order, **kw)


def test_r21_4_share_divided_among_active_users_only_and_by_weight():
    team = Project("team-a", 8, user_fair_share=True,
                   user_weights=(("ann", 2.0), ("idle", 5.0)))  # fmt: skip
    jobs = [pending("team-a", f"{u}-{i}", u, order=k * 10 + i)
            for k, u in enumerate(("ann", "bob")) for i in range(8)]  # fmt: skip
    plan = plan_cycle(Snapshot((Node("n1", 8),), (team,), tuple(jobs)))
    # "idle" has no job: not active, so ann (2) and bob (1) divide 8 as 16/3 and 8/3, floored
    # to whole GPUs with the remainder to the larger leftover (R2.9, R2.10 one level down).
    assert plan.user_fair_shares == {"team-a": {"ann": 5.0, "bob": 3.0}}
    assert plan.fair_shares == {"team-a": 8.0}  # the users are not queues of the plan's map


def test_r21_4_off_by_default_nothing_is_counted_per_user():
    jobs = [pending("team-a", f"{u}-{i}", u, order=k * 10 + i)
            for k, u in enumerate(("ann", "bob")) for i in range(8)]  # fmt: skip
    plan = plan_cycle(Snapshot((Node("n1", 8),), (Project("team-a", 8),), tuple(jobs)))
    assert plan.user_fair_shares == {}
    started = [d.job[1] for d in plan.decisions if d.kind == "start"]
    assert started == [f"ann-{i}" for i in range(8)]  # KAI's order inside a project: oldest


def test_r21_7_allocation_order_favours_the_user_furthest_under_their_share():
    team = Project("team-a", 6, user_fair_share=True)
    jobs = [
        *(running("team-a", f"ann-{i}", "ann", "n1", i, order=i) for i in range(3)),
        running("team-a", "bob-0", "bob", "n1", 3, order=3),
        pending("team-a", "ann-old", "ann", order=4),  # older than bob's pending jobs
        pending("team-a", "bob-1", "bob", order=5),
        pending("team-a", "bob-2", "bob", order=6),
    ]
    plan = plan_cycle(Snapshot((Node("n1", 6),), (team,), tuple(jobs)))
    started = [d.job[1] for d in plan.decisions if d.kind == "start"]
    assert started == ["bob-1", "bob-2"]  # bob holds 1 of his 3, ann 3 of her 3
    assert "ann's user share of 3 GPUs in team-a" in plan.pending_reasons[("team-a", "ann-old")]

    off = Project("team-a", 6)
    plan = plan_cycle(Snapshot((Node("n1", 6),), (off,), tuple(jobs)))
    assert [d.job[1] for d in plan.decisions if d.kind == "start"] == ["ann-old", "bob-1"]


def test_r21_5_another_projects_reclaim_takes_from_the_user_most_over_their_share_first():
    team = Project("team-a", 2, user_fair_share=True)
    other = Project("team-b", 6)
    jobs = [
        # ann's jobs are the older ones: KAI alone would take bob's newest first (R8.1).
        *(running("team-a", f"ann-{i}", "ann", "n1", i, order=i) for i in range(6)),
        *(running("team-a", f"bob-{i}", "bob", "n1", 6 + i, order=10 + i) for i in range(2)),
        *(pending("team-b", f"b-{i}", "carl", order=20 + i) for i in range(4)),
    ]
    snapshot, _ = settle(Snapshot((Node("n1", 8),), (team, other), tuple(jobs)))
    held = {u: sum(1 for j in snapshot.jobs if j.user == u and j.running) for u in ("ann", "bob")}
    assert held == {"ann": 2, "bob": 2}  # team-a back to 4, all four taken from ann


def test_r21_8_preemption_takes_only_the_users_own_jobs():
    team = Project("team-a", 8, user_fair_share=True)
    jobs = [
        *(running("team-a", f"ann-{i}", "ann", "n1", i, order=i) for i in range(4)),
        *(running("team-a", f"bob-{i}", "bob", "n1", 4 + i, order=10 + i) for i in range(4)),
        pending("team-a", "ann-notebook", "ann", order=20, type="interactive"),
    ]
    plan = plan_cycle(Snapshot((Node("n1", 8),), (team,), tuple(jobs)))
    evicted = [d.job[1] for d in plan.decisions if d.kind == "evict"]
    assert evicted == ["ann-3"]  # her own newest train job, not bob's newer ones

    off = Project("team-a", 8)
    plan = plan_cycle(Snapshot((Node("n1", 8),), (off,), tuple(jobs)))
    assert [d.job[1] for d in plan.decisions if d.kind == "evict"] == ["bob-3"]


def test_r21_4_a_user_queue_named_like_a_project_is_refused():
    projects = (Project("team-a", 4, user_fair_share=True), Project("team-a/ann", 4))
    jobs = (pending("team-a", "j", "ann", order=1),)
    with pytest.raises(ValueError, match="user queue 'team-a/ann'"):
        plan_cycle(Snapshot((Node("n1", 8),), projects, jobs))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"user_fair_share": "yes"}, "projects[0].user_fair_share: must be true or false"),
        ({"user_weights": [["ann", 2]]}, "projects[0].user_weights: must be an object"),
        ({"user_weights": {"ann": 0}}, "projects[0].user_weights.ann: must be a number above 0"),
        ({"user_weights": {"ann": "2"}}, "projects[0].user_weights.ann: must be a number"),
    ],
)
def test_r21_4_bad_user_fair_share_fields_in_a_scenario_are_refused_naming_the_field(
    fields, message
):
    data = {
        "name": "bad",
        "nodes": [{"name": "n1", "gpus": 8}],
        "projects": [{"name": "team-a", "quota": 2, **fields}],
        "steps": [],
    }
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(data)
