"""The simulator's time-based fair share (R2.9, E10): `--fairshare-half-life` and its window feed
the core each team's decayed usage, kept incrementally, equal to the portal's sum over runs."""

import random

import pytest

from scheduler.usage import Interval, UsageParams, decayed_by_queue, normalise
from scheduler_tools.simulate import Cluster, SimOptions, Simulation, get_policy
from scheduler_tools.simulate.__main__ import main
from scheduler_tools.simulate.trace import Trace, TraceJob
from scheduler_tools.simulate.usage import UsageTracker

HOUR = 3600.0


def test_r2_9_the_incremental_usage_equals_the_sum_over_runs():
    params = UsageParams(half_life_s=2 * HOUR, window_s=10 * HOUR)
    rng = random.Random(7)
    runs = []
    for team in ("a", "b", "c"):
        for _ in range(40):
            start = rng.uniform(0, 30 * HOUR)
            runs.append(Interval(team, rng.choice([0.5, 1, 2, 8]), start,
                                 start + rng.uniform(60, 5 * HOUR)))  # fmt: skip
    tracker = UsageTracker(params, capacity_gpus=64)
    events = sorted([(r.start, r.queue, r.gpus) for r in runs]
                    + [(r.end, r.queue, -r.gpus) for r in runs])  # fmt: skip
    checks = [5 * HOUR, 12 * HOUR, 20.5 * HOUR, 31 * HOUR, 40 * HOUR]
    for now in checks:
        for t, team, delta in [e for e in events if e[0] <= now]:
            tracker.change(team, t, delta)
        events = [e for e in events if e[0] > now]
        ongoing = [Interval(r.queue, r.gpus, r.start, r.end if r.end <= now else None)
                   for r in runs if r.start <= now]  # fmt: skip
        expected = normalise(decayed_by_queue(ongoing, now, params), 64, params)
        got = tracker.normalised(now)
        assert got.keys() == expected.keys()
        for team, value in expected.items():
            assert got[team] == pytest.approx(value, rel=1e-9, abs=1e-12)


def _trace():
    """A held the whole 4-GPU node for 10,000 s; then A and B each submit four 1-GPU jobs."""
    jobs = [TraceJob(0, "a0", 0, 10_000, 4, 1, "A")]
    for i in range(4):
        for team in ("A", "B"):
            jobs.append(TraceJob(len(jobs), f"{team.lower()}{i + 1}", 10_000, 5_000, 1, 1, team))
    return Trace(jobs)


def _queues(**options):
    cluster = Cluster(1, 4, {"A": 1.0, "B": 1.0}, {})
    options = {"cycle_s": 10, "progress": False, **options}
    result = Simulation(_trace(), cluster, get_policy("kai"), SimOptions(**options)).run()
    waits = {"A": [], "B": []}
    for job in result.jobs:
        if job.job_id != "a0":  # the usage itself
            waits[job.team].append(job.queued_s)
    return {team: sum(queued) / len(queued) for team, queued in waits.items()}


def test_r2_9_with_a_half_life_the_team_that_used_the_cluster_waits_longer():
    # Off: quota 1 each and the 2 spare GPUs split by weight, 2 and 2: both teams wait alike.
    off = _queues()
    assert off["A"] == pytest.approx(off["B"])
    # On (1 h half-life): A's usage is 0.85 of the cluster, its round weight 0.5 + (0.5 - 0.85)
    # -> 0.15 against B's 1.0, so B gets 3 GPUs and A 1 (R2.9); A's jobs wait longer.
    on = _queues(fairshare_half_life_s=HOUR, fairshare_window_s=24 * HOUR)
    assert on["B"] < on["A"]
    assert on["B"] < off["B"]


def _write(tmp_path):
    trace = tmp_path / "t.csv"
    lines = ["job_id,submit_time_s,duration_s,gpus,pods,team,user,status"]
    lines += [f"j{i},{i * 10},100,1,1,{'AB'[i % 2]},u,Pass" for i in range(6)]
    trace.write_text("\n".join(lines) + "\n")
    return trace


def test_the_fairshare_flags_are_in_the_setting_line(tmp_path, capsys):
    trace = _write(tmp_path)
    flags = ["--fairshare-half-life", "12h", "--fairshare-window", "2d", "--k-value", "2"]
    main([str(trace), "--nodes", "1x2", "--quiet", "--no-html", *flags])
    out = capsys.readouterr().out
    assert "fair share over time: half-life 12 h, window 2 d, k 2" in out


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--fairshare-half-life", "soon"], "--fairshare-half-life"),
        (["--fairshare-half-life", "never"], "--fairshare-half-life"),
        (["--fairshare-half-life", "1h", "--fairshare-window", "0"], "--fairshare-window"),
        (["--k-value", "-1"], "--k-value"),
    ],
)
def test_bad_fairshare_flags_name_the_flag(tmp_path, flags, named):
    trace = _write(tmp_path)
    with pytest.raises(SystemExit, match=named):
        main([str(trace), "--nodes", "1x2", "--quiet", *flags])


def _user_trace():
    """One team on one 4-GPU node: ann submits eight 1-GPU jobs of 10,000 s at 0, bob four of
    1,000 s at 100 (the trace's `user` column)."""
    jobs = [TraceJob(i, f"ann{i}", 0, 10_000, 1, 1, "A", user="ann") for i in range(8)]
    jobs += [TraceJob(8 + i, f"bob{i}", 100, 1_000, 1, 1, "A", user="bob") for i in range(4)]
    return Trace(jobs)


def _user_waits(**options):
    cluster = Cluster(1, 4, {"A": 4.0}, {})
    options = {"cycle_s": 10, "progress": False, **options}
    result = Simulation(_user_trace(), cluster, get_policy("kai"), SimOptions(**options)).run()
    bob = [job for job in result.jobs if job.job_id.startswith("bob")]
    return max(job.queued_s for job in bob), sum(job.evictions for job in result.jobs)


def test_r21_5_with_user_fair_share_a_teammate_waits_for_no_one_elses_long_jobs():
    # Off: ann's four running 10,000 s jobs hold the node, and her four pending ones are older
    # than bob's: bob waits for two of her jobs to end (R4.3, oldest first).
    off_wait, off_evictions = _user_waits()
    assert off_wait >= 10_000 and off_evictions == 0
    # On: ann and bob share the team's 4 GPUs 2 and 2; bob reclaims two of ann's jobs at once
    # (R21.5) and his second pair follows his first; nobody waits 10,000 s.
    on_wait, on_evictions = _user_waits(user_fair_share=True)
    assert on_wait < 2_000 and on_evictions >= 2


def test_r21_4_the_cli_passes_user_fair_share(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    lines = ["job_id,submit_time_s,duration_s,gpus,pods,team,user,status"]
    lines += [f"a{i},0,10000,1,1,A,ann,Pass" for i in range(8)]
    lines += [f"b{i},100,1000,1,1,A,bob,Pass" for i in range(4)]
    trace.write_text("\n".join(lines) + "\n")
    assert main([str(trace), "--nodes", "1x4", "--policy", "kai", "--quiet", "--no-html",
                 "--out", str(tmp_path / "out"), "--user-fair-share"]) == 0  # fmt: skip
    with_flag = (tmp_path / "out").rglob("jobs.csv")
    rows = [line.split(",") for path in with_flag for line in path.read_text().splitlines()]
    assert rows, "jobs.csv written"
    header = rows[0]
    evictions = sum(int(row[header.index("evictions")]) for row in rows[1:])
    assert evictions >= 2  # bob reclaimed from ann: the flag reached the core
