"""Property tests (hypothesis) of the scheduling core on random clusters and workloads.

Every test settles a random snapshot cycle by cycle and checks an invariant after every plan:
devices never over-committed (R5.3, R5.4), limits kept (R3.1), interactive jobs never evicted
and never beyond quota (R7.3, R3.2), gangs whole (R6.1), the plan deterministic (R1.1) and steady
states stable (R1.3), every waiting job told why, and quotas honoured at steady state (R9).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import Department, Job, Node, Plan, Policy, Project, Snapshot, plan_cycle
from scheduler.apply import apply_plan

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FRACTIONS = [round(0.1 * i, 1) for i in range(1, 10)]
EPS = 1e-6


@st.composite
def clusters(draw, pools=True, departments=True, unready=True):
    """1-6 nodes of 1-8 GPUs, 1-5 projects with quotas, weights, limits, pools, departments."""
    nodes = []
    for i in range(draw(st.integers(1, 6))):
        nodes.append(
            Node(
                f"n{i}",
                draw(st.integers(1, 8)),
                pool=draw(st.sampled_from(["default", "a100"])) if pools else "default",
                ready=draw(st.booleans()) or not unready or i == 0,
                schedulable=draw(st.booleans()) or not unready or i == 0,
            )
        )
    depts = []
    if departments and draw(st.booleans()):
        depts = [
            Department("d0", draw(st.integers(0, 8)), limit=draw(st.none() | st.integers(8, 16))),
        ]
    projects = []
    for i in range(draw(st.integers(1, 5))):
        quota = draw(st.sampled_from([0, 0.5, 1, 2, 3, 4, 8]))
        limit = draw(st.none() | st.sampled_from([quota, quota + 1, quota + 4]))
        projects.append(
            Project(
                f"p{i}",
                quota,
                over_quota_weight=draw(st.none() | st.sampled_from([0, 1, 3])),
                limit=limit,
                node_pools=tuple(draw(st.sampled_from([(), ("default",), ("a100",)])))
                if pools
                else (),
                department="d0" if depts and draw(st.booleans()) else None,
                order=i,
            )
        )
    return tuple(nodes), tuple(projects), tuple(depts)


@st.composite
def jobs_for(draw, projects, start: int, count: int, whole_only=False):
    """Random pending jobs of the given projects with unique names and increasing order."""
    jobs = []
    for k in range(draw(st.integers(0, count))):
        project = draw(st.sampled_from(projects)).name
        gpus = 1 if whole_only else draw(st.sampled_from([*FRACTIONS, 1, 1, 2, 4, 8]))
        jobs.append(
            Job(
                project,
                f"j{start + k}",
                gpus,
                pods=1 if whole_only or gpus < 1 else draw(st.integers(1, 3)),
                type="train" if whole_only else draw(st.sampled_from(["train", "interactive"])),
                priority=None if whole_only else draw(st.none() | st.integers(0, 20)),
                order=start + k,
            )
        )
    return jobs


@st.composite
def workloads(draw, **kwargs):
    """A cluster with a first batch of jobs settled, then a second batch submitted."""
    nodes, projects, depts = draw(clusters(**kwargs))
    first = draw(jobs_for(projects, 0, 12))
    second = draw(jobs_for(projects, 100, 12))
    return Snapshot(nodes=nodes, projects=projects, departments=depts, jobs=tuple(first)), second


def settle_checked(snapshot: Snapshot, check, policy=None, max_cycles=60):
    """Plan and apply until a plan is empty, calling check(before, plan, after) each time."""
    for _ in range(max_cycles):
        plan = plan_cycle(snapshot, policy)
        after = apply_plan(snapshot, plan)
        check(snapshot, plan, after)
        if plan.empty:
            return snapshot, plan
        snapshot = after
    raise AssertionError(f"no steady state within {max_cycles} cycles")


def run(workload, check, policy=None):
    """Settle the first batch, add the second, settle again; return the final state."""
    snapshot, second = workload
    snapshot, _ = settle_checked(snapshot, check, policy)
    snapshot = replace(snapshot, jobs=(*snapshot.jobs, *second))
    return settle_checked(snapshot, check, policy)


def no_check(before, plan, after):
    """Nothing to check between cycles."""


def device_use(snapshot: Snapshot):
    use = defaultdict(float)
    for job in snapshot.jobs:
        for pod in job.placement:
            for device in pod.devices:
                use[(pod.node, device)] += 1.0 if job.gpus >= 1 else pod.share
    return use


def running_gpus(snapshot: Snapshot, interactive_only=False):
    held = defaultdict(float)
    for job in snapshot.jobs:
        if job.running and (job.type == "interactive" or not interactive_only):
            held[job.project] += job.gpus * len(job.placement)
    return held


@SETTINGS
@given(workloads())
def test_r5_3_r5_4_no_device_is_ever_over_committed(workload):
    def check(before, plan, after):
        nodes = {n.name: n for n in after.nodes}
        for (node, device), used in device_use(after).items():
            assert device < nodes[node].gpus, f"{node} has no device {device}"
            assert used <= 1 + EPS, f"{node}/{device} holds {used}"
        for job in after.jobs:
            for pod in job.placement:
                if job.gpus >= 1:
                    assert len(set(pod.devices)) == int(job.gpus) == len(pod.devices)
                else:
                    assert len(pod.devices) == 1 and math.isclose(pod.share, job.gpus)

    run(workload, check)


@SETTINGS
@given(workloads())
def test_r3_1_limits_of_projects_and_departments_are_never_exceeded(workload):
    def check(before, plan, after):
        held = running_gpus(after)
        for project in after.projects:
            if project.limit is not None:
                assert held[project.name] <= project.limit + EPS, project.name
        for dept in after.departments:
            members = [p.name for p in after.projects if p.department == dept.name]
            if dept.limit is not None:
                assert sum(held[m] for m in members) <= dept.limit + EPS

    run(workload, check)


@SETTINGS
@given(workloads())
def test_r7_3_r3_2_interactive_jobs_are_never_evicted_or_moved_nor_beyond_quota(workload):
    def check(before, plan, after):
        interactive = {j.key for j in before.jobs if j.type == "interactive" and j.running}
        for decision in plan.decisions:
            if decision.kind in ("evict", "move"):
                assert decision.job not in interactive, decision
        held = running_gpus(after, interactive_only=True)
        for project in after.projects:
            assert held[project.name] <= project.quota + EPS, project.name

    run(workload, check)


@SETTINGS
@given(workloads())
def test_r6_1_gangs_run_with_all_their_pods_or_not_at_all(workload):
    def check(before, plan, after):
        pods = {j.key: j.pods for j in after.jobs}
        for decision in plan.decisions:
            if decision.kind in ("start", "move"):
                assert len(decision.placement) == pods[decision.job], decision
        for job in after.jobs:
            assert len(job.placement) in (0, job.pods), job

    run(workload, check)


@SETTINGS
@given(workloads())
def test_r1_1_the_same_snapshot_gives_the_same_plan_whatever_the_job_list_order(workload):
    snapshot, second = workload
    settled, _ = settle_checked(snapshot, no_check)
    for state in (settled, replace(settled, jobs=(*settled.jobs, *second))):
        reordered = replace(state, jobs=tuple(reversed(state.jobs)))
        assert plan_cycle(state) == plan_cycle(state)
        assert plan_cycle(state).decisions == plan_cycle(reordered).decisions


@SETTINGS
@given(workloads())
def test_r1_3_a_settled_cluster_stays_settled(workload):
    settled, last = run(workload, no_check)
    assert last.empty
    assert plan_cycle(settled).empty


@SETTINGS
@given(workloads())
def test_every_waiting_job_is_told_which_rule_keeps_it_waiting(workload):
    def check(before, plan: Plan, after):
        for job in after.jobs:
            if not job.running:
                reason = plan.pending_reasons.get(job.key, "")
                assert reason.rstrip().endswith(")") and "(R" in reason, (job.key, reason)

    run(workload, check)


@SETTINGS
@given(workloads())
def test_r2_7_fair_shares_cover_quota_up_to_demand_and_never_exceed_the_cluster(workload):
    def check(before, plan: Plan, after):
        total = sum(n.gpus for n in before.nodes if n.ready)
        quotas = sum(p.quota for p in before.projects if p.department is None)
        quotas += sum(d.quota for d in before.departments)
        top = [p.name for p in before.projects if p.department is None]
        top += [d.name for d in before.departments]
        if quotas <= total:
            assert sum(plan.fair_shares[name] for name in top) <= total + EPS
        demand = defaultdict(float)
        for job in before.jobs:
            demand[job.project] += job.gpus * job.pods
        for project in before.projects:
            if project.department is None:
                wanted = min(project.quota, demand[project.name])
                if project.limit is not None:
                    wanted = min(wanted, project.limit)
                assert plan.fair_shares[project.name] >= wanted - EPS, project.name

    run(workload, check)


@st.composite
def guaranteed(draw):
    """One pool, all nodes ready, quotas not over-subscribed, 1-GPU single-pod train jobs."""
    nodes, _, _ = draw(clusters(pools=False, departments=False, unready=False))
    total = sum(n.gpus for n in nodes)
    count = draw(st.integers(1, 4))
    quotas = [draw(st.integers(0, max(0, total // count))) for _ in range(count)]
    projects = tuple(Project(f"p{i}", q, order=i) for i, q in enumerate(quotas))
    first = draw(jobs_for(projects, 0, 3 * total, whole_only=True))
    second = draw(jobs_for(projects, 1000, 3 * total, whole_only=True))
    return Snapshot(nodes=nodes, projects=projects, jobs=tuple(first)), second


@SETTINGS
@given(guaranteed())
def test_r9_a_project_asking_no_more_than_its_quota_gets_it_at_steady_state(workload):
    """Exact in this regime: whole 1-GPU train jobs, one pool, quotas within the cluster. (With
    fractions, gangs or pools, fragmentation may legitimately keep a quota job waiting.)"""
    settled, _ = run(workload, no_check)
    held = running_gpus(settled)
    asked = defaultdict(float)
    for job in settled.jobs:
        asked[job.project] += job.gpus
    for project in settled.projects:
        want = min(project.quota, asked[project.name])
        assert held[project.name] >= want - EPS, (project.name, held, asked)


@SETTINGS
@given(
    workloads(),
    st.sampled_from(
        [
            Policy(gpu_placement="spread"),
            Policy(gpu_sharing="spread"),
            Policy(victim_order="smallest_sufficient"),
            Policy(consolidation=False),
        ]
    ),
)
def test_other_policies_keep_devices_and_gangs_whole_and_settle(workload, policy):
    def check(before, plan, after):
        for (_node, _device), used in device_use(after).items():
            assert used <= 1 + EPS
        for job in after.jobs:
            assert len(job.placement) in (0, job.pods)

    run(workload, check, policy)


@st.composite
def predicted_workloads(draw):
    """workloads() with a predicted run time on every job (None = unknown), so that backfill
    makes reservations (B1) on the fixed clock of these properties."""
    snapshot, second = draw(workloads())

    def guess(job):
        return replace(job, expected_s=draw(st.none() | st.sampled_from([10, 60, 300])))

    jobs = tuple(guess(j) for j in snapshot.jobs)
    return replace(snapshot, jobs=jobs), [guess(j) for j in second]


@SETTINGS
@given(predicted_workloads())
def test_with_backfill_devices_limits_gangs_and_interactive_jobs_stay_whole_and_it_settles(
    workload,
):
    """R5.3/R5.4, R3.1, R3.2, R7.3, R6.1 and R1.3 with `Policy(backfill=True)` (B1-B5); every
    waiting job is told which rule (R or B) keeps it waiting."""

    def check(before, plan: Plan, after):
        for (_node, _device), used in device_use(after).items():
            assert used <= 1 + EPS
        for job in after.jobs:
            assert len(job.placement) in (0, job.pods)
        held = running_gpus(after)
        for project in after.projects:
            if project.limit is not None:
                assert held[project.name] <= project.limit + EPS, project.name
        interactive = {j.key for j in before.jobs if j.type == "interactive" and j.running}
        for decision in plan.decisions:
            assert not (decision.kind in ("evict", "move") and decision.job in interactive)
        held = running_gpus(after, interactive_only=True)
        for project in after.projects:
            assert held[project.name] <= project.quota + EPS, project.name
        for job in after.jobs:
            if not job.running:
                reason = plan.pending_reasons.get(job.key, "")
                assert reason.endswith(")") and ("(R" in reason or "(B" in reason), reason

    policy = Policy(backfill=True)
    settled, last = run(workload, check, policy)
    assert last.empty and plan_cycle(settled, policy).empty
