"""Backfill with reservations (Policy.backfill): Allot's B1-B5 (scheduler/actions/backfill.py).

The base cluster: three 8-GPU nodes; team-a (quota 32) runs jobs that end at t=100 (n1, 4 GPUs),
t=200 (n2, 4 GPUs), t=300 (n2, 2 GPUs) and one of unknown length (n3, 5 GPUs); the clock is at
t=50. team-a/big (2 pods x 8 GPUs) is first in order (R4.1: team-a stays within quota, team-b has
quota 0) and needs two empty nodes: n1 empties at 100, n2 at 300, n3 never, so its reservation is
at t=300. team-b's later jobs: `short` (2 GPUs, 200 s: ends 250), `long4` (4 GPUs, 400 s: only n1
has room, which the reservation needs) and `side` (2 GPUs, unknown length: lands on n3).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduler import Job, Node, PodPlacement, Policy, Project, Snapshot, plan_cycle, settle
from scheduler.actions.backfill import overran, pods_fitting, predicted_end
from scheduler.apply import apply_plan
from scheduler.model import Decision, Plan
from scheduler.placement import place_job
from scheduler.queues import build_queues
from scheduler.state import ClusterState

BACKFILL = Policy(backfill=True)
NODES = (Node("n1", 8), Node("n2", 8), Node("n3", 8))
TEAMS = (Project("team-a", 32, order=1), Project("team-b", 0, order=2))
NOW = 50.0


def running(name, gpus, node, devices, expected, project="team-a", started=0.0, **kw):
    """A job running on one node since `started`, predicted to take `expected` seconds."""
    placement = (PodPlacement(node, tuple(devices)),)
    return Job(project, name, gpus, placement=placement, started=started, expected_s=expected, **kw)


def base(*extra: Job, now: float = NOW, nodes=NODES, teams=TEAMS) -> Snapshot:
    """The cluster of the module docstring with big, short, long4 and side pending."""
    jobs = (
        running("r100", 4, "n1", range(4), 100, order=1),
        running("r200", 4, "n2", range(4), 200, order=2),
        running("r300", 2, "n2", (4, 5), 300, order=3),
        running("forever", 5, "n3", range(5), None, order=4),
        Job("team-a", "big", 8, pods=2, order=10, expected_s=1000),
        Job("team-b", "short", 2, order=11, expected_s=200),
        Job("team-b", "long4", 4, order=12, expected_s=400),
        Job("team-b", "side", 2, order=13),
        *extra,
    )
    return Snapshot(nodes=nodes, projects=teams, jobs=jobs, now=now)


def decision(plan: Plan, name: str) -> Decision | None:
    return next((d for d in plan.decisions if d.job[1] == name), None)


def started(plan: Plan) -> dict[str, str]:
    return {d.job[1]: d.action for d in plan.decisions if d.kind == "start"}


# ------------------------------------------------------------------------------------ B1


def test_b1_the_first_blocked_gang_is_reserved_when_predicted_ends_free_two_nodes():
    plan = plan_cycle(base(), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 300}
    assert plan.pending_reasons[("team-a", "big")] == (
        "reserved: predicted ends free room for its 2 pods of 8 GPUs at t=300 (in 250 s); "
        "later jobs may only start if they do not delay it (B1)"
    )


def test_b1_release_times_count_from_each_jobs_start():
    jobs = base().jobs
    shifted = tuple(replace(j, started=j.started + 40) if j.running else j for j in jobs)
    plan = plan_cycle(replace(base(), jobs=shifted), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 340}


def test_b1_an_overrun_job_counts_as_ending_now():
    snapshot = base(now=320)  # r300 (predicted end 300) still runs at t=320
    snapshot = replace(snapshot, jobs=tuple(j for j in snapshot.jobs if j.name != "r100"))
    assert predicted_end(snapshot.jobs[1], 320) == 320
    plan = plan_cycle(snapshot, BACKFILL)
    assert plan.reservations == {("team-a", "big"): 320}


def test_b1_a_job_with_unknown_run_time_never_frees_its_gpus_so_there_is_no_reservation():
    jobs = tuple(replace(j, expected_s=None) if j.running else j for j in base().jobs)
    plan = plan_cycle(replace(base(), jobs=jobs), BACKFILL)
    assert plan.reservations == {}
    assert started(plan) == {"short": "allocate", "long4": "allocate", "side": "allocate"}
    assert plan.pending_reasons[("team-a", "big")].endswith("(R6.1)")


def outlooks(snapshot: Snapshot, **ends: float) -> Snapshot:
    """The snapshot with these running jobs' outlooks (`expected_end`) set."""
    jobs = tuple(replace(j, expected_end=ends[j.name]) if j.name in ends else j
                 for j in snapshot.jobs)  # fmt: skip
    return replace(snapshot, jobs=jobs)


def test_b1_a_jobs_outlook_replaces_start_plus_prediction():
    # r300 has run 50 s of a predicted 300; the producer's outlook (it knows how long jobs like
    # it run once they got this far) says it ends at 420: n2 empties then, not at 300.
    plan = plan_cycle(outlooks(base(), r300=420), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 420}
    # A job past its outlook ends any moment, as an overrun one does (n2 at 50, n1 at 100).
    plan = plan_cycle(outlooks(base(), r300=40, r200=45), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 100}


def test_b1_a_job_that_outlived_every_job_like_it_never_ends():
    # An infinite outlook: n2 never empties and n3 runs `forever`, so two empty nodes never
    # come - no reservation, and the later jobs start as under KAI.
    snapshot = outlooks(base(), r300=math.inf)
    assert predicted_end(next(j for j in snapshot.jobs if j.name == "r300"), NOW) is None
    plan = plan_cycle(snapshot, BACKFILL)
    assert plan.reservations == {}
    assert started(plan) == {"short": "allocate", "long4": "allocate", "side": "allocate"}


def test_b1_a_job_started_in_this_cycle_ends_by_its_prediction_whatever_an_old_outlook_said():
    job = running("r", 1, "n1", (0,), 100, expected_end=999)
    assert predicted_end(job, 50) == 999
    assert predicted_end(job, 50, started_now=True) == 150


def test_b1_a_running_job_without_a_start_time_never_ends_either():
    job = running("r", 1, "n1", (0,), 100, started=None)
    assert predicted_end(job, 50) is None
    assert predicted_end(job, 50, started_now=True) == 150


def test_b1_a_job_too_big_for_any_node_gets_no_reservation_and_the_next_blocked_job_does():
    huge = Job("team-a", "huge", 16, order=5)  # 16 GPUs in one pod: no node has them (R5.3)
    plan = plan_cycle(base(huge), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 300}
    assert plan.pending_reasons[("team-a", "huge")] == "no node in the cluster has 16 GPUs (R5.3)"


def test_b1_the_pod_count_matches_the_cores_placement_on_random_loads():
    """pods_fitting is the B1 shortcut for 'place_job succeeds': check it against the core."""
    import random

    rng = random.Random(7)
    for _ in range(300):
        gpus = rng.choice([0.1, 0.25, 0.3, 0.5, 0.7, 1, 2, 3, 4, 8])
        nodes = tuple(Node(f"n{i}", rng.choice([2, 4, 8])) for i in range(rng.randint(1, 4)))
        projects = (Project("p", 100),)
        jobs = []
        for n in nodes:
            for device in range(n.gpus):
                share = rng.choice([0, 0, 1, 0.2, 0.5, 0.6])
                if share:
                    jobs.append(
                        Job(
                            "p",
                            f"{n.name}-{device}",
                            share,
                            placement=(PodPlacement(n.name, (device,), share),),
                        )
                    )
        pods = rng.randint(1, 6)
        job = Job("p", "new", gpus, pods=pods)
        snapshot = Snapshot(nodes, projects, (*jobs, job))
        state = ClusterState(nodes, build_queues(snapshot), snapshot.jobs)
        count = sum(pods_fitting(state.nodes[n.name].used, job) for n in nodes)
        for policy in (Policy(), Policy(gpu_placement="spread", gpu_sharing="spread")):
            placed = place_job(state, job, policy)
            assert (placed is not None) == (count >= pods), (gpus, pods, count)
            if placed is not None:
                state.unplace(job)


# ------------------------------------------------------------------------------------ B2


def test_b2_a_short_job_that_ends_before_the_reservation_starts_now():
    plan = plan_cycle(base(), BACKFILL)
    short = decision(plan, "short")
    assert short.kind == "start" and short.action == "backfill"
    assert short.reason == (
        "started on n2: ends by t=250 before team-a/big's reservation at t=300 (B2)"
    )


def test_b2_a_a_job_ending_exactly_at_the_reservation_still_starts():
    jobs = tuple(replace(j, expected_s=250) if j.name == "short" else j for j in base().jobs)
    plan = plan_cycle(replace(base(), jobs=jobs), BACKFILL)
    assert decision(plan, "short").reason.startswith("started on n2: ends by t=300 before")


def test_b2_b_a_job_on_gpus_the_reservation_does_not_need_starts_even_with_unknown_length():
    plan = plan_cycle(base(), BACKFILL)
    side = decision(plan, "side")
    assert side.action == "backfill" and side.placement[0].node == "n3"
    assert side.reason == (
        "started on n3: uses GPUs team-a/big's reservation at t=300 does not need (B2)"
    )


def test_b2_b_an_interactive_job_ending_before_the_reservation_may_only_use_unneeded_gpus():
    teams = (Project("team-a", 64, order=1), Project("team-b", 8, order=2))  # big goes first
    nodes = (Node("n1", 8), Node("n2", 8))
    jobs = (
        running("r100", 4, "n1", range(4), 100, order=1),
        running("r300", 8, "n2", range(8), 300, order=2),
        Job("team-a", "big", 8, pods=2, order=10),
        Job("team-b", "notebook", 4, type="interactive", order=11, expected_s=10),
    )
    plan = plan_cycle(Snapshot(nodes, teams, jobs, now=NOW), BACKFILL)
    assert plan.reservations == {("team-a", "big"): 300}
    assert "notebook" not in started(plan)
    assert plan.pending_reasons[("team-b", "notebook")].endswith(
        "an interactive job could not be evicted if it overran (R7.3, B3)"
    )


def test_b2_jobs_in_a_pool_the_reservation_does_not_use_start_as_plain_allocate():
    nodes = (*NODES, Node("v1", 4, pool="v100"))
    teams = (*TEAMS, Project("team-v", 4, node_pools=("v100",), order=3))
    extra = Job("team-v", "v-job", 4, order=14, expected_s=5000)
    teams = (Project("team-a", 32, node_pools=("default",), order=1), *teams[1:])
    plan = plan_cycle(base(extra, nodes=nodes, teams=teams), BACKFILL)
    assert decision(plan, "v-job").action == "allocate"


# ------------------------------------------------------------------------------------ B3


def test_b3_a_long_job_that_would_delay_the_reservation_waits_and_names_it():
    plan = plan_cycle(base(), BACKFILL)
    assert decision(plan, "long4") is None  # not even reclaim, preempt or consolidation took it
    assert plan.pending_reasons[("team-b", "long4")] == (
        "fits now, but would delay team-a/big's reservation at t=300: it needs GPUs the "
        "reservation needs and is predicted to end at t=450 (B3)"
    )


def test_b3_a_job_of_unknown_length_on_needed_gpus_waits():
    jobs = tuple(replace(j, expected_s=None) if j.name == "long4" else j for j in base().jobs)
    plan = plan_cycle(replace(base(), jobs=jobs), BACKFILL)
    assert plan.pending_reasons[("team-b", "long4")].endswith("its run time is unknown (B3)")


def test_b3_without_backfill_kai_lets_the_long_job_overtake_the_gang():
    plan = plan_cycle(base(), Policy())
    assert plan.reservations == {}
    assert started(plan) == {"short": "allocate", "long4": "allocate", "side": "allocate"}
    assert decision(plan, "long4").placement[0].node == "n1"
    assert plan.pending_reasons[("team-a", "big")] == (
        "the 2 pods of 8 GPUs each do not all fit at once in the cluster (R6.1)"
    )


def test_b3_held_jobs_are_not_consolidated_around_the_reservation():
    """Consolidation could make room for long4 by moving side; with a reservation it serves
    only the reserved job and jobs ahead of it."""
    plan = plan_cycle(base(), Policy(backfill=True, reclaim=False, preempt=False))
    assert "long4" not in started(plan)


# ------------------------------------------------------------------------------------ B4


def overrun_snapshot(*jobs: Job, now=260.0) -> Snapshot:
    """Two empty-able nodes; team-a/big (2 x 8 GPUs) waits; `jobs` hold the GPUs. team-b holds
    no more than its quota, so reclaim (R9.4) cannot take its jobs: only B4 can."""
    nodes = (Node("n1", 8), Node("n2", 8))
    teams = (Project("team-a", 16, order=1), Project("team-b", 2, order=2))
    big = Job("team-a", "big", 8, pods=2, order=10, expected_s=1000)
    return Snapshot(nodes, teams, (*jobs, big), now=now)


def backfilled(name, node, devices, started, expected=200, **kw):
    """A team-b job started by backfill."""
    return running(
        name, len(devices), node, devices, expected, "team-b", started, backfilled=True, **kw
    )


def test_b4_an_overrun_backfilled_job_is_evicted_when_that_lets_the_reserved_job_start_now():
    late = backfilled("late", "n2", (6, 7), started=50)  # predicted end 250 < now 260
    assert overran(late, 260)
    plan = plan_cycle(overrun_snapshot(late), BACKFILL)
    evict, start = plan.decisions[:2]
    assert (evict.kind, evict.job, evict.action) == (
        "evict",
        ("team-b", "late"),
        "backfill-reclaim",
    )
    assert evict.beneficiary == ("team-a", "big")
    assert evict.reason == (
        "evicted: backfilled ahead of team-a/big, it has overrun its predicted end at t=250 "
        "and team-a/big can start in its place (B4)"
    )
    assert (start.kind, start.job, start.action) == ("start", ("team-a", "big"), "backfill-reclaim")
    assert sorted(p.node for p in start.placement) == ["n1", "n2"]
    assert plan.reservations == {}


def test_b4_no_eviction_when_the_reserved_job_still_would_not_fit():
    late = backfilled("late", "n2", (6, 7), started=50)
    r300 = running("r300", 2, "n2", (4, 5), 300, order=3)
    plan = plan_cycle(overrun_snapshot(late, r300), BACKFILL)
    assert plan.decisions == ()
    assert plan.reservations == {("team-a", "big"): 300}  # late counts as ending now (B1)


def test_b4_a_backfilled_job_within_its_prediction_is_not_evicted():
    early = backfilled("early", "n2", (6, 7), started=100)  # predicted end 300 > now 260
    plan = plan_cycle(overrun_snapshot(early), BACKFILL)
    assert plan.decisions == ()
    assert plan.reservations == {("team-a", "big"): 300}


def test_b4_r7_3_an_interactive_backfilled_job_is_never_evicted():
    late = backfilled("late", "n2", (6, 7), started=50, type="interactive")
    plan = plan_cycle(overrun_snapshot(late), BACKFILL)
    assert all(d.kind != "evict" for d in plan.decisions)
    assert plan.reservations == {("team-a", "big"): 260}


def test_b4_victims_go_newest_first_and_one_whose_gpus_were_not_needed_keeps_running():
    """big needs one empty node. Newest first: `newest` on n1 goes, but n1 also holds a job of
    unknown length; then `older` on n2 goes and big fits on n2 — so `newest` is put back."""
    nodes = (Node("n1", 8), Node("n2", 8))
    teams = (Project("team-a", 16, order=1), Project("team-b", 2, order=2))
    jobs = (
        running("stay", 7, "n1", range(7), None, order=1),
        backfilled("newest", "n1", (7,), started=60),
        backfilled("older", "n2", (0,), started=40),
        Job("team-a", "big", 8, order=10),
    )
    plan = plan_cycle(Snapshot(nodes, teams, jobs, now=300), BACKFILL)
    assert [(d.kind, d.job[1]) for d in plan.decisions] == [("evict", "older"), ("start", "big")]
    assert decision(plan, "big").placement[0].node == "n2"


def test_b4_an_unrelated_overrun_job_is_not_evicted_by_plain_kai():
    late = backfilled("late", "n2", (6, 7), started=50)
    plan = plan_cycle(overrun_snapshot(late), Policy())
    assert all(d.action != "backfill-reclaim" for d in plan.decisions)


# ------------------------------------------------------------------------------------ B5


def test_b5_the_reservation_is_recomputed_every_cycle_and_holds_steady():
    snapshot, plans = settle(base(), BACKFILL)
    assert plans[-1].empty and plans[-1].reservations == {("team-a", "big"): 300}
    assert len(plans) == 2  # one cycle of backfill starts, then nothing changes
    long4 = next(j for j in snapshot.jobs if j.name == "long4")
    assert not long4.running


def test_b5_the_reservation_follows_the_clock():
    """At t=310, r100/r200/r300 and short have ended (removed): big starts at once."""
    snapshot, _ = settle(base(), BACKFILL)
    gone = {"r100", "r200", "r300", "short"}
    later = replace(snapshot, now=310, jobs=tuple(j for j in snapshot.jobs if j.name not in gone))
    plan = plan_cycle(later, BACKFILL)
    assert decision(plan, "big").action == "allocate"
    assert decision(plan, "long4") is None  # n1 and n2 are big's now; n3 has 1 GPU left


def test_b5_one_reservation_per_set_of_node_pools():
    nodes = (Node("a1", 8, pool="a"), Node("a2", 8, pool="a"), Node("b1", 8, pool="b"))
    teams = (
        Project("team-a", 16, node_pools=("a",), order=1),
        Project("team-b", 16, node_pools=("b",), order=2),
        Project("team-c", 0, order=3),
    )
    jobs = (
        running("ra1", 8, "a1", range(8), 100, order=1),
        running("ra2", 4, "a2", range(4), 200, order=2),
        running("rb1", 4, "b1", range(4), 150, order=3, project="team-b"),
        Job("team-a", "gang-a", 8, pods=2, order=10),
        Job("team-b", "gang-b", 8, order=11),
        Job("team-a", "also-a", 8, pods=2, order=12),
    )
    plan = plan_cycle(Snapshot(nodes, teams, jobs, now=0), BACKFILL)
    assert plan.reservations == {("team-a", "gang-a"): 200, ("team-b", "gang-b"): 150}


# ------------------------------------------------------------------------------------ B6


def b6_snapshot() -> Snapshot:
    """The base cluster with team-b's jobs replaced by `slow2` (older, 2 GPUs, 5,000 s) and
    `quick2` (newer, 2 GPUs, 100 s). Placement puts either on n2's two free GPUs (the fullest
    node, R5.2), which the reservation needs at t=300."""
    jobs = (
        *(j for j in base().jobs if j.project == "team-a"),
        Job("team-b", "slow2", 2, order=11, expected_s=5000),
        Job("team-b", "quick2", 2, order=12, expected_s=100),
    )
    return replace(base(), jobs=jobs)


def test_b6_behind_a_reservation_a_projects_shortest_predicted_job_goes_first():
    plan = plan_cycle(b6_snapshot(), BACKFILL)
    starts = [d for d in plan.decisions if d.kind == "start"]
    assert [d.job[1] for d in starts] == ["quick2", "slow2"]
    assert starts[0].placement[0].node == "n2"  # ends at t=150, before the reservation (B2a)
    assert starts[1].placement[0].node == "n3"  # GPUs the reservation does not need (B2b)


def test_b6_without_a_reservation_the_order_stays_r4_3():
    """Nothing is blocked without team-a/big: backfill changes nothing and the older slow2 is
    served first (R4.3), onto n2, as under plain KAI."""
    jobs = tuple(j for j in b6_snapshot().jobs if j.name != "big")
    for policy in (BACKFILL, Policy()):
        plan = plan_cycle(replace(b6_snapshot(), jobs=jobs), policy)
        starts = [d for d in plan.decisions if d.kind == "start"]
        assert [d.job[1] for d in starts] == ["slow2", "quick2"]
        assert starts[0].placement[0].node == "n2"


# ------------------------------------------------------------------------------------ apply


def test_apply_plan_records_start_times_and_which_starts_were_backfilled():
    snapshot = base()
    plan = plan_cycle(snapshot, BACKFILL)
    after = {j.name: j for j in apply_plan(snapshot, plan).jobs}
    assert after["short"].started == NOW and after["short"].backfilled
    assert after["side"].started == NOW and after["side"].backfilled
    assert after["long4"].started is None and not after["long4"].backfilled
    assert after["r100"].started == 0.0  # untouched jobs keep theirs


def test_apply_plan_clears_the_bookkeeping_of_an_evicted_job_and_a_b4_start_is_not_backfill():
    snapshot = overrun_snapshot(backfilled("late", "n2", (6, 7), started=50))
    after = {j.name: j for j in apply_plan(snapshot, plan_cycle(snapshot, BACKFILL)).jobs}
    assert not after["late"].running and after["late"].started is None
    assert not after["late"].backfilled
    assert after["late"].expected_end is None
    assert after["big"].started == 260 and not after["big"].backfilled


def test_apply_plan_drops_a_started_or_evicted_jobs_outlook_which_was_about_another_run():
    snapshot = outlooks(overrun_snapshot(backfilled("late", "n2", (6, 7), started=50)), late=900)
    after = {j.name: j for j in apply_plan(snapshot, plan_cycle(snapshot, BACKFILL)).jobs}
    assert after["late"].expected_end is None and after["big"].expected_end is None


def test_apply_plan_gives_plain_starts_a_start_time_without_backfill():
    snapshot = base()
    after = {j.name: j for j in apply_plan(snapshot, plan_cycle(snapshot)).jobs}
    assert after["long4"].started == NOW and not after["long4"].backfilled


# ------------------------------------------------------------------------------------ properties

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def timelines(draw):
    """A small cluster and jobs with a predicted and an actual run time each (they differ, so
    jobs overrun and end early), submitted over time."""
    nodes = tuple(
        Node(f"n{i}", draw(st.sampled_from([2, 4, 8]))) for i in range(draw(st.integers(1, 4)))
    )
    projects = tuple(
        Project(
            f"p{i}",
            draw(st.sampled_from([0, 2, 4, 8])),
            limit=draw(st.none() | st.just(12)),
            order=i,
        )
        for i in range(draw(st.integers(1, 3)))
    )
    jobs = []
    for k in range(draw(st.integers(1, 14))):
        gpus = draw(st.sampled_from([0.5, 1, 1, 2, 4, 8]))
        jobs.append(
            (
                draw(st.sampled_from([0, 0, 50, 100])),  # submitted at
                draw(st.integers(20, 400)),  # actual run time
                Job(
                    draw(st.sampled_from(projects)).name,
                    f"j{k}",
                    gpus,
                    pods=1 if gpus < 1 else draw(st.integers(1, 3)),
                    type=draw(st.sampled_from(["train", "train", "interactive"])),
                    order=k,
                    expected_s=draw(st.none() | st.sampled_from([30, 100, 250])),
                ),
            )
        )
    return nodes, projects, jobs


@SETTINGS
@given(timelines())
def test_b_rules_keep_devices_gangs_limits_and_interactive_jobs_whole_over_time(timeline):
    nodes, projects, specs = timeline
    actual = {job.key: run for _, run, job in specs}
    snapshot = Snapshot(nodes, projects)
    for now in range(0, 1500, 25):
        arrived = {j.key for j in snapshot.jobs}
        new = [j for at, _, j in specs if at <= now and j.key not in arrived]
        kept = [
            j
            for j in snapshot.jobs
            if not (j.running and j.started is not None and j.started + actual[j.key] <= now)
        ]
        snapshot = replace(snapshot, now=float(now), jobs=(*kept, *new))
        for _ in range(30):
            plan = plan_cycle(snapshot, BACKFILL)
            assert plan == plan_cycle(replace(snapshot, jobs=snapshot.jobs[::-1]), BACKFILL)
            after = apply_plan(snapshot, plan)
            check_invariants(snapshot, plan, after)
            if plan.empty:
                break
            snapshot = after
        else:
            raise AssertionError("no steady state within 30 cycles")


def check_invariants(before: Snapshot, plan: Plan, after: Snapshot) -> None:
    """Devices (R5.3, R5.4), gangs (R6.1), limits (R3.1), interactive jobs (R7.3), reasons."""
    use: dict = defaultdict(float)
    for job in after.jobs:
        assert len(job.placement) in (0, job.pods), job
        for pod in job.placement:
            for device in pod.devices:
                use[(pod.node, device)] += 1.0 if job.gpus >= 1 else pod.share
    assert all(v <= 1 + 1e-6 for v in use.values()), use
    held: dict = defaultdict(float)
    for job in after.jobs:
        held[job.project] += job.gpus * len(job.placement)
    for project in after.projects:
        if project.limit is not None:
            assert held[project.name] <= project.limit + 1e-6
    interactive = {j.key for j in before.jobs if j.running and j.type == "interactive"}
    for d in plan.decisions:
        assert not (d.kind in ("evict", "move") and d.job in interactive), d
        if d.action == "backfill-reclaim" and d.kind == "evict":
            victim = next(j for j in before.jobs if j.key == d.job)
            assert victim.backfilled and overran(victim, before.now)
    for job in after.jobs:
        if not job.running:
            reason = plan.pending_reasons[job.key]
            assert reason.endswith(")") and ("(R" in reason or "(B" in reason), reason
    for key, at in plan.reservations.items():
        assert at >= before.now and not math.isinf(at)
        assert plan.pending_reasons[key].endswith("(B1)")
