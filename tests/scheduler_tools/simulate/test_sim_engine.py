"""The simulator's engine on hand-checked traces: exact JCTs and queueing under fifo-strict and
kai, restart from zero vs checkpoint after a reclaim eviction (R9), gangs (R6.1), SJF order
(R4.3), the backfill bookkeeping, the depth bound's exactness, and the fairness arithmetic."""

import math

import pytest

import scheduler_tools.simulate.engine as engine
from scheduler.model import Plan
from scheduler_tools.simulate import Cluster, SimOptions, Simulation, get_policy
from scheduler_tools.simulate.metrics import TeamTracker
from scheduler_tools.simulate.trace import Trace, TraceJob, read_trace


def make_trace(rows):
    """rows: (job_id, submit, duration, gpus, team[, pods])."""
    jobs = []
    for index, row in enumerate(rows):
        job_id, submit, duration, gpus, team, *rest = row
        pods = rest[0] if rest else 1
        jobs.append(
            TraceJob(index, job_id, submit, duration, gpus / pods, pods, team, requested_gpus=gpus)
        )
    return Trace(jobs)


def run(trace, cluster, policy, **options):
    options = {"cycle_s": 10, "progress": False, **options}
    return Simulation(trace, cluster, get_policy(policy), SimOptions(**options)).run()


def by_id(result):
    return {job.job_id: (job.jct_s, job.queued_s) for job in result.jobs}


# Two nodes x 4 GPUs, teams A and B with quota 4 each, cycles every 10 s.
HAND = make_trace(
    [
        ("a1", 0, 100, 4, "A"),
        ("a2", 0, 100, 2, "A"),
        ("a3", 0, 50, 2, "A"),
        ("b1", 20, 60, 4, "B"),
        ("b2", 30, 30, 2, "B"),
        ("a4", 40, 10, 1, "A"),
    ]
)
TWO_BY_FOUR = Cluster(2, 4, {"A": 4.0, "B": 4.0}, {"A": 1, "B": 1})


def test_fifo_strict_confines_each_team_to_its_quota_with_head_of_line_blocking():
    # R3.1 limit = quota. t0: A's free quota 4 shows only a1 (a2 would exceed it): a1 starts.
    # t20: b1 starts (B's quota). t30 b2 and t40 a4 wait (B and A at quota; a4 also queues
    # behind a2, a3). t80: b1 ends -> b2 starts. t100: a1 ends -> a2, a3 start (4 GPUs = free
    # quota); a4 (1 GPU) still behind them. t150: a3 ends -> a4 starts.
    # JCT  a1 100, a2 200, a3 150, b1 60, b2 110-30=80, a4 160-40=120  (sum 710)
    # wait a1 0,   a2 100, a3 100, b1 0,  b2 50,        a4 110         (sum 360)
    result = run(HAND, TWO_BY_FOUR, "fifo-strict")
    assert by_id(result) == {
        "a1": (100, 0),
        "a2": (200, 100),
        "a3": (150, 100),
        "b1": (60, 0),
        "b2": (80, 50),
        "a4": (120, 110),
    }
    assert result.summary["avg_jct_s"] == pytest.approx(710 / 6)
    assert result.summary["avg_queue_s"] == pytest.approx(360 / 6)
    assert result.summary["evictions"] == 0


def test_fifo_vc_gives_each_team_its_own_nodes_with_the_same_result_here():
    assert by_id(run(HAND, TWO_BY_FOUR, "fifo-vc")) == by_id(run(HAND, TWO_BY_FOUR, "fifo-strict"))


def test_kai_borrows_idle_gpus_and_reclaims_them_for_the_team_within_quota():
    # t0: A alone asks 8 -> fair share 8; a1 on n00000 (tie by name, R5.2), a2 and a3 on
    # n00001. t20: b1 (4) within B's quota reclaims (R9.2-R9.4): victims newest first from A
    # (a3, then a2, R8.1) free n00001 -> a2 and a3 evicted, b1 starts. t30/t40: b2, a4 wait
    # (B and A at fair share 4, R9.2). t80: b1 ends; fair shares A 6, B 2; B's b2 goes first
    # (within quota, R4.1.2) then A's a2; a3 and a4 wait. t100: a1 ends -> a3, a4 start.
    # Restart from zero: a2 runs 80..180, a3 100..150.
    # JCT  a1 100, a2 180, a3 150, b1 60, b2 80, a4 110-40=70       (sum 640)
    # wait a1 0, a2 0+(80-20)=60, a3 100-20=80, b1 0, b2 50, a4 60  (sum 250)
    result = run(HAND, TWO_BY_FOUR, "kai")
    assert by_id(result) == {
        "a1": (100, 0),
        "a2": (180, 60),
        "a3": (150, 80),
        "b1": (60, 0),
        "b2": (80, 50),
        "a4": (70, 60),
    }
    assert result.summary["avg_jct_s"] == pytest.approx(640 / 6)
    assert result.summary["avg_queue_s"] == pytest.approx(250 / 6)
    assert result.summary["evictions"] == 2
    # a2 and a3 each ran 20 s on 2 GPUs before the eviction: 80 GPU-seconds thrown away.
    assert result.summary["lost_gpu_h"] == pytest.approx(80 / 3600)


def test_checkpoint_restart_resumes_evicted_jobs_with_their_remaining_time():
    # Same plan as above; a2 and a3 each keep the 20 s done before the eviction at t20:
    # a2 runs 80..160 (80 s left), a3 100..130 (30 s left).
    zero = by_id(run(HAND, TWO_BY_FOUR, "kai", restart="zero"))
    checkpoint = run(HAND, TWO_BY_FOUR, "kai", restart="checkpoint")
    assert (zero["a2"], zero["a3"]) == ((180, 60), (150, 80))
    assert by_id(checkpoint)["a2"] == (160, 60)
    assert by_id(checkpoint)["a3"] == (130, 80)
    assert checkpoint.summary["lost_gpu_h"] == 0


def test_r6_1_a_gang_larger_than_a_node_waits_for_two_whole_nodes():
    # 2 x 8 GPUs, one team. A 1-GPU job holds n00000 until 100; the 16-GPU gang (2 pods of 8)
    # cannot start before both nodes are whole: it starts at the t100 tick.
    trace = make_trace([("small", 0, 100, 1, "t"), ("gang", 0, 50, 16, "t", 2)])
    cluster = Cluster(2, 8, {"t": 16.0}, {"t": 2})
    result = run(trace, cluster, "kai")
    assert by_id(result) == {"small": (100, 0), "gang": (150, 100)}
    gang = result.jobs[1]
    assert (gang.pods, gang.gpus) == (2, 16)


def test_sjf_oracle_serves_the_shortest_pending_job_of_a_team_first():
    # One GPU. long runs 0..100; at t5 three jobs wait; kai starts them in submission order,
    # sjf-oracle by duration (R4.3 with order = duration rank).
    trace = make_trace(
        [
            ("long", 0, 100, 1, "t"),
            ("j50", 5, 50, 1, "t"),
            ("j10", 5, 10, 1, "t"),
            ("j30", 5, 30, 1, "t"),
        ]
    )
    cluster = Cluster(1, 1, {"t": 1.0}, {"t": 1})
    fifo_order = {j.job_id: j.first_start_s for j in run(trace, cluster, "kai").jobs}
    sjf_order = {j.job_id: j.first_start_s for j in run(trace, cluster, "sjf-oracle").jobs}
    assert fifo_order == {"long": 0, "j50": 100, "j10": 150, "j30": 160}
    assert sjf_order == {"long": 0, "j10": 100, "j30": 110, "j50": 140}


def test_snapshots_carry_started_expected_and_backfilled_for_the_core(monkeypatch):
    # The core's backfill is not needed to check the bookkeeping: relabel the core's starts as
    # "backfill" decisions and look at the snapshots the simulator hands to plan_cycle.
    seen = []
    real = engine.plan_cycle

    def relabelled(snapshot, policy):
        seen.append(snapshot)
        plan = real(snapshot, policy)
        decisions = tuple(
            d.__class__(d.kind, d.job, "backfill", d.reason, d.placement, d.beneficiary)
            for d in plan.decisions
        )
        return Plan(decisions, plan.fair_shares, plan.pending_reasons, plan.allocated)

    monkeypatch.setattr(engine, "plan_cycle", relabelled)
    trace = make_trace([(f"w{i}", 0, 100, 1, "t") for i in range(3)] + [("late", 5, 10, 1, "t")])
    result = run(trace, Cluster(1, 2, {"t": 2.0}, {"t": 1}), "kai-backfill")
    assert all(j.backfilled == 1 for j in result.jobs)
    later = seen[1]  # the t10 cycle: w0, w1 run since t0, w2 and late pending
    running = {j.name: j for j in later.jobs if j.running}
    assert {name: (j.started, j.backfilled) for name, j in running.items()} == {
        "w0": (0, True),
        "w1": (0, True),
    }
    # Nothing finished before t10: every prediction is the predictor's default.
    assert {j.expected_s for j in later.jobs} == {3600.0}
    assert {j.basis for j in result.jobs} == {"default"}


@pytest.mark.parametrize("censoring", [True, False])
def test_running_jobs_teach_the_predictor_and_carry_their_outlook(monkeypatch, censoring):
    # One 8-GPU node: four 1-GPU jobs of 1000 s and three of 5 s start at t0; the short ones
    # end at t5. When `late` is submitted at t50 the predictor knows three runs of 5 s and
    # four jobs running for 50 s: Kaplan-Meier keeps 4/7 of the jobs running past 5 s, so the
    # median is beyond what finished - the longest run seen, 50 s - not 5 s. In the t50
    # cycle each long job has outlived every finished run: its outlook is infinite (it ends
    # at no predictable time, B1). Without censoring: 5 s, and no outlook.
    seen = []
    real = engine.plan_cycle

    def spy(snapshot, policy):
        seen.append(snapshot)
        return real(snapshot, policy)

    monkeypatch.setattr(engine, "plan_cycle", spy)
    rows = [(f"long{i}", 0, 1000, 1, "t") for i in range(4)]
    rows += [(f"short{i}", 0, 5, 1, "t") for i in range(3)] + [("late", 50, 5, 1, "t")]
    result = run(make_trace(rows), Cluster(1, 8, {"t": 8.0}, {"t": 1}), "kai-backfill",
                 outlook_s=10, censoring=censoring)  # fmt: skip
    at_50 = next(s for s in seen if s.now == 50)
    ends = {j.name: j.expected_end for j in at_50.jobs if j.running}
    predicted = {j.job_id: j.predicted_s for j in result.jobs}
    if censoring:
        assert ends == {f"long{i}": math.inf for i in range(4)}
        assert predicted["late"] == 50
    else:
        assert ends == {f"long{i}": None for i in range(4)}
        assert predicted["late"] == 5


@pytest.mark.parametrize("bursts", [True, False])
def test_a_bursts_first_finished_job_predicts_its_waiting_siblings(bursts):
    # One GPU. Three 10 s jobs at t0 teach the predictor; a sweep of three 300 s jobs comes at
    # t1000, 1000 s later (its own burst). At submission the sweep is predicted from the team's
    # history, 10 s. s0 ends at t1300; the refresh before the next cycle predicts s1 and s2
    # again, from their burst: 300 s (the last prediction before a job starts is the one kept).
    # Without bursts every job keeps its prediction from submission.
    rows = [(f"old{i}", 0, 10, 1, "t") for i in range(3)]
    rows += [(f"s{i}", 1000 + i, 300, 1, "t") for i in range(3)]
    result = run(make_trace(rows), Cluster(1, 1, {"t": 1.0}, {"t": 1}), "kai-backfill",
                 outlook_s=10, bursts=bursts)  # fmt: skip
    predicted = {j.job_id: (j.predicted_s, j.basis) for j in result.jobs}
    assert predicted["s0"] == (10, "project+gpus")
    if bursts:
        assert predicted["s1"] == predicted["s2"] == (300, "burst")
    else:
        assert predicted["s1"] == predicted["s2"] == (10, "project+gpus")


def test_backfill_oracle_predicts_every_job_exactly():
    result = run(HAND, TWO_BY_FOUR, "kai-backfill-oracle")
    assert {j.job_id: j.predicted_s for j in result.jobs} == {
        "a1": 100, "a2": 100, "a3": 50, "b1": 60, "b2": 30, "a4": 10,
    }  # fmt: skip
    assert {j.basis for j in result.jobs} == {"oracle"}


def test_depth_bound_shows_fewer_jobs_and_changes_nothing():
    # One 4-GPU node, two teams of quota 2, 40 one-GPU and a few 2-GPU jobs each: deep queues.
    rows = []
    for i in range(40):
        for team in ("A", "B"):
            rows.append((f"{team}{i}", i * 3, 30 + (i * 7) % 50, 1 if i % 5 else 2, team))
    trace = make_trace(rows)
    cluster = Cluster(1, 4, {"A": 2.0, "B": 2.0}, {})
    bounded = run(trace, cluster, "kai", depth_bound=True)
    full = run(trace, cluster, "kai", depth_bound=False)
    assert bounded.summary["hidden_jobs"] > 0
    assert full.summary["hidden_jobs"] == 0
    assert [vars(j) for j in bounded.jobs] == [vars(j) for j in full.jobs]


def test_jobs_that_can_never_run_are_reported_unfinished():
    # A team without quota under fifo-strict has limit 0 (R3.1): its job never starts.
    trace = make_trace([("ok", 0, 10, 1, "A"), ("never", 0, 10, 1, "nobody")])
    result = run(trace, Cluster(1, 4, {"A": 4.0}, {"A": 1}), "fifo-strict")
    assert (result.summary["finished"], result.summary["unfinished"]) == (1, 1)


def test_fairness_charges_shortage_only_after_a_cycle_and_in_units_of_jobs():
    # Quota 4 GPUs. t0: jobs of 2 and 4 GPUs wait (asking 6 >= 4); a cycle leaves both
    # pending -> short from t0. t10: the 2-GPU job starts: 2 held + 4 > 4, no longer short.
    # t40: it ends; the 4-GPU job would fit -> short, but only charged after the t50 cycle.
    # t60: it starts (held 4 = quota) until t100.
    team = TeamTracker("A", 4000)
    team.change(0, demand=+2000)
    team.add_pending(2000)
    team.change(0, demand=+4000)
    team.add_pending(4000)
    team.after_cycle(0)
    team.change(10, alloc=+2000)
    team.remove_pending(2000)
    team.after_cycle(30)
    team.change(40, alloc=-2000, demand=-2000)
    team.after_cycle(50)
    team.change(60, alloc=+4000)
    team.remove_pending(4000)
    team.advance(100)
    # asking the whole 100 s; held >= quota 60..100; short (charged) 0..10 and 50..60.
    assert (team.asking_s, team.held_s, team.short_s) == (100, 40, 20)
    assert team.fairness() == pytest.approx(0.8)
    assert team.fairness_raw() == pytest.approx(0.4)
    assert TeamTracker("idle", 4000).fairness() is None
    assert TeamTracker("no-quota", 0).fairness() is None


def test_fifo_strict_skips_a_job_larger_than_the_quota_instead_of_blocking_the_team():
    # R3.1: an 8-GPU job never fits a 4-GPU limit; the team's later job still runs.
    trace = make_trace([("huge", 0, 10, 8, "A"), ("small", 5, 10, 1, "A")])
    result = run(trace, Cluster(2, 4, {"A": 4.0}, {"A": 1}), "fifo-strict")
    assert by_id(result) == {"huge": (None, 0.0), "small": (15, 5)}
    assert result.summary["unfinished"] == 1


def test_depth_bound_with_backfill_keeps_a_backfill_window_per_team_and_shape():
    rows = [(f"A{i}", i, 40, 1, "A") for i in range(120)]
    trace = make_trace(rows)
    cluster = Cluster(1, 2, {"A": 2.0}, {})
    window = Simulation(trace, cluster, get_policy("kai-backfill"), SimOptions(progress=False))
    window.run()
    kai = Simulation(trace, cluster, get_policy("kai"), SimOptions(progress=False))
    kai.run()
    # Both leave jobs out; backfill shows 50 per team and shape, kai only what can start.
    assert 0 < window.hidden_jobs < kai.hidden_jobs


@pytest.mark.parametrize(
    ("round_up", "second_wait", "utilization", "requested", "idle", "unrequested"),
    [(False, 0, 1.0, 1.0, 0.0, 0.0), (True, 100, 1.0, 0.5, 0.0, 0.5)],
)
def test_r5_4_fractions_share_a_device_unless_rounded_up_to_whole_gpus(
    tmp_path, round_up, second_wait, utilization, requested, idle, unrequested
):
    # One GPU, two 0.5-GPU pods of 100 s at t0. Packed (R5.4): both run 0..100. Rounded up
    # (R5.3): the second waits for the first, 100..200; the GPU is always allocated but only
    # half of it was asked for, and while the second waits (0..100) half is unrequested.
    path = tmp_path / "fractions.csv"
    path.write_text("job_id,submit_time_s,duration_s,gpus\nf1,0,100,0.5\nf2,0,100,0.5\n")
    trace = read_trace(path, node_gpus=1, round_up_fractions=round_up)
    result = run(trace, Cluster(1, 1, {"all": 1.0}, {"all": 1}), "kai")
    assert by_id(result)["f2"] == (100 + second_wait, second_wait)
    summary = result.summary
    assert summary["utilization"] == pytest.approx(utilization)
    assert summary["utilization_requested"] == pytest.approx(requested)
    assert summary["idle_while_pending"] == pytest.approx(idle)
    assert summary["unrequested_while_pending"] == pytest.approx(unrequested)


def test_kai_las_a_new_job_preempts_its_teams_long_run_and_the_run_resumes_after_it():
    # One GPU, one team; bands at 1 and 10 GPU-hours (L1). `long` (5 h) starts at 0 and reaches
    # band 1 at t3600. `quick` (30 min) arrives at t7200 in band 0 and preempts it (L3, R10.2):
    # quick runs 7200..9000. With a checkpoint long resumes at 9000 with 3 h left (ends 19800);
    # from zero it runs its 5 h again (ends 27000), staying in band 1: thrown-away service
    # counts as service (L1). Under kai quick waits for long to end at 18000.
    trace = make_trace([("long", 0, 18000, 1, "t"), ("quick", 7200, 1800, 1, "t")])
    cluster = Cluster(1, 1, {"t": 1.0}, {"t": 1})
    assert by_id(run(trace, cluster, "kai-las", restart="checkpoint")) == {
        "long": (19800, 1800),
        "quick": (1800, 0),
    }
    zero = run(trace, cluster, "kai-las", restart="zero")
    assert by_id(zero) == {"long": (27000, 1800), "quick": (1800, 0)}
    assert zero.summary["lost_gpu_h"] == pytest.approx(2.0)
    assert by_id(run(trace, cluster, "kai")) == {"long": (18000, 0), "quick": (12600, 10800)}


def test_kai_las_bands_follow_service_across_cycles_without_a_new_event():
    # Two 1-GPU jobs of one team on one GPU: `a` runs first; `b` waits in band 0 from t10.
    # a (band 0) and b (band 0) are equal, so nothing happens until a reaches 1 GPU-hour at
    # t3600 — a band crossing is an event of its own — when b preempts it (L3). b then runs
    # until it too reaches band 1 at 3600 + 3600 = 7200; a and b are then equal again and b,
    # running, keeps the GPU until it ends at 3600 + 4000 = 7600; a resumes and ends at 7600 +
    # 1400 = 9000 (checkpoint).
    trace = make_trace([("a", 0, 5000, 1, "t"), ("b", 10, 4000, 1, "t")])
    cluster = Cluster(1, 1, {"t": 1.0}, {"t": 1})
    result = run(trace, cluster, "kai-las", restart="checkpoint")
    assert by_id(result) == {"a": (9000, 4000), "b": (7590, 3590)}
    assert result.summary["evictions"] == 1


def test_kai_default_bands_a_reclaim_takes_the_most_served_job_and_fresh_work_goes_first():
    # One node x 2 GPUs; A and B have quota 1 each. A's `old` (10 h) starts at 0 and `young`
    # (10 h) at 5000, borrowing B's GPU. At 7200 B's b1 (1 h) reclaims one GPU (R9). A's `fresh`
    # (1000 s) arrives at 7300 and waits: A is at its fair share of 1 (R9.2).
    # kai-plain (KAI's R8.1, R4.3): the newest job, `young` (held 2200 s), is evicted; when b1
    # ends at 10800 A's older pending job, `young`, resumes (33800 s left, ends 44600) and
    # `fresh` waits for `old` to end at 36000 (runs 36000..37000).
    # kai (service bands at 1 and 10 GPU-hours, L2): `old` has held 2 GPU-hours (band 1) and
    # `young` 0.61 (band 0): the reclaim takes `old`; at 10800 `fresh` (band 0) starts before
    # `old` (band 1), ends 11800, and `old` resumes then (28800 s left with a checkpoint, ends
    # 40600; from zero its whole 36000 s again, ends 47800, 2 GPU-hours lost).
    trace = make_trace(
        [
            ("old", 0, 36000, 1, "A"),
            ("young", 5000, 36000, 1, "A"),
            ("b1", 7200, 3600, 1, "B"),
            ("fresh", 7300, 1000, 1, "A"),
        ]
    )
    cluster = Cluster(1, 2, {"A": 1.0, "B": 1.0}, {"A": 1, "B": 1})
    assert by_id(run(trace, cluster, "kai-plain", restart="checkpoint")) == {
        "old": (36000, 0),
        "young": (39600, 3600),
        "b1": (3600, 0),
        "fresh": (29700, 28700),
    }
    assert by_id(run(trace, cluster, "kai", restart="checkpoint")) == {
        "old": (40600, 4600),
        "young": (36000, 0),
        "b1": (3600, 0),
        "fresh": (4500, 3500),
    }
    zero = run(trace, cluster, "kai", restart="zero")
    assert by_id(zero)["old"] == (47800, 4600)
    assert zero.summary["lost_gpu_h"] == pytest.approx(2.0)
    assert zero.summary["avg_queue_s"] == pytest.approx((4600 + 3500) / 4)


def test_r23_3_racks_count_where_multi_node_jobs_start_and_preferred_rack_packs_them():
    # 6 x 2 GPUs in racks of 2 (n0-n1, n2-n3, n4-n5). x takes a GPU of n00000; the 2 x 2-GPU
    # gang needs two empty nodes: bin-packing takes n00001 and n00002 (two racks); preferring a
    # rack it takes one rack's two nodes (issue 38). The jobs start at once either way.
    trace = make_trace([("x", 0, 1000, 1, "t"), ("gang", 0, 100, 4, "t", 2)])
    cluster = Cluster(6, 2, {"t": 12.0}, {"t": 6})
    spread = run(trace, cluster, "kai", rack_nodes=2)
    packed = run(trace, cluster, "kai", rack_nodes=2, preferred_rack=True)
    assert (spread.summary["multi_node_jobs"], spread.summary["multi_node_one_rack"]) == (1, 0)
    assert (packed.summary["multi_node_jobs"], packed.summary["multi_node_one_rack"]) == (1, 1)
    assert by_id(spread) == by_id(packed) == {"x": (1000, 0), "gang": (100, 0)}
    assert "multi_node_jobs" not in run(trace, cluster, "kai").summary
