"""Users inside the simulated teams (issue 36): the seeded Zipf split of a team's jobs among
5-20 users, the per-user limit the core enforces (R21.1, R21.2) and the per-user figures."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from scheduler_tools.simulate import Cluster, SimOptions, Simulation, get_policy
from scheduler_tools.simulate.__main__ import main
from scheduler_tools.simulate.trace import Trace, TraceJob
from scheduler_tools.simulate.users import parse_users, split_users


def job(index: int, submit: float, duration: float, gpus: float, team: str, user: str = ""):
    return TraceJob(index, f"{team}-{index}", submit, duration, gpus, 1, team, user=user,
                    requested_gpus=gpus)  # fmt: skip


def run(trace: Trace, cluster: Cluster, **options):
    options = {"cycle_s": 10, "progress": False, **options}
    return Simulation(trace, cluster, get_policy("kai"), SimOptions(**options)).run()


def test_the_split_is_seeded_per_team_zipf_skewed_and_keeps_given_users():
    jobs = [job(i, i, 10, 1, team) for i, team in enumerate(["A", "B"] * 2000)]
    jobs.append(job(4000, 4000, 10, 1, "A", user="ann"))
    trace = Trace(jobs)
    first, again = split_users(trace, (5, 20), seed=7), split_users(trace, (5, 20), seed=7)
    assert [j.user for j in first.jobs] == [j.user for j in again.jobs]
    assert first.jobs[-1].user == "ann"
    alone = split_users(Trace([j for j in jobs if j.team == "A"]), (5, 20), seed=7)
    assert [j.user for j in alone.jobs] == [j.user for j in first.jobs if j.team == "A"]
    for team in ("A", "B"):
        counts = Counter(j.user for j in first.jobs[:-1] if j.team == team)
        assert 5 <= len(counts) <= 20
        ranked = [counts[f"{team}.u{k}"] for k in range(1, len(counts) + 1)]
        assert ranked[0] == max(ranked) and ranked[0] > 2 * ranked[-1]  # Zipf: u1 the heaviest
        harmonic = sum(1 / k for k in range(1, len(counts) + 1))
        assert ranked[0] / 2000 == pytest.approx(1 / harmonic, abs=0.05)
    other = split_users(trace, (5, 20), seed=8)
    assert [j.user for j in other.jobs] != [j.user for j in first.jobs]


@pytest.mark.parametrize("text", ["0-3", "9-5", "x", "-3"])
def test_a_bad_users_range_is_refused_naming_the_flag(text):
    with pytest.raises(ValueError, match="--split-users"):
        parse_users(text)


def heavy_and_teammate() -> Trace:
    """One team of quota 8 on one 8-GPU node: ann queues ten 1-GPU jobs of an hour, ben one job
    a minute later."""
    jobs = [job(i, 0, 3600, 1, "T", user="ann") for i in range(10)]
    return Trace([*jobs, job(10, 60, 600, 1, "T", user="ben")])


def test_r21_1_a_per_user_gpu_limit_lets_the_teammate_start_at_once():
    cluster = Cluster(1, 8, {"T": 8.0}, {})
    off = run(heavy_and_teammate(), cluster)
    on = run(heavy_and_teammate(), cluster, user_max_gpus=2)
    ben_off, ben_on = off.jobs[-1], on.jobs[-1]
    assert ben_off.queued_s >= 3600 - 60  # behind eight of ann's hour-long jobs
    assert ben_on.queued_s <= 10  # the next cycle
    assert max(o.first_start_s for o in on.jobs[:10]) >= 3 * 3600  # two at a time: 5 rounds
    assert off.summary["heaviest_share"] == pytest.approx(1.0)
    assert on.summary["heaviest_share"] is None  # ben never waited behind ann
    rows = {row.user: row for row in on.users}
    assert rows["ann"].heaviest and not rows["ben"].heaviest
    assert rows["ben"].mean_queue_s == ben_on.queued_s


def test_r21_2_a_running_jobs_limit_caps_each_user():
    cluster = Cluster(1, 8, {"T": 8.0}, {})
    on = run(heavy_and_teammate(), cluster, user_max_running=3)
    assert sum(o.first_start_s == 0 for o in on.jobs[:10]) == 3


def test_the_depth_bound_is_exact_with_per_user_limits():
    # deep queues of one shape across users: a job held by its user's limit must not hide a
    # teammate's job of the same shape (the bound's queues are per user then)
    rows = []
    for i in range(60):
        for team in ("A", "B"):
            rows.append(job(len(rows), i * 3, 30 + (i * 7) % 50, 1, team, f"{team}{i % 3}"))
    trace = Trace(rows)
    cluster = Cluster(1, 4, {"A": 2.0, "B": 2.0}, {})
    bounded = run(trace, cluster, depth_bound=True, user_max_gpus=1)
    full = run(trace, cluster, depth_bound=False, user_max_gpus=1)
    assert bounded.summary["hidden_jobs"] > 0
    assert [vars(j) for j in bounded.jobs] == [vars(j) for j in full.jobs]


def test_the_depth_bound_does_not_hide_a_teammate_behind_a_held_user():
    # 40 of h's jobs ahead of m's one of the same shape: with queues per shape only, the bound
    # showed h's first 17 (idle 8 + fair share 8) and hid m's job behind h's limit for hours
    jobs = [job(i, 0, 3600, 1, "T", user="h") for i in range(40)]
    trace = Trace([*jobs, job(40, 0, 600, 1, "T", user="m")])
    cluster = Cluster(1, 8, {"T": 8.0}, {})
    bounded = run(trace, cluster, depth_bound=True, user_max_gpus=2)
    full = run(trace, cluster, depth_bound=False, user_max_gpus=2)
    assert bounded.jobs[-1].queued_s == 0
    assert [vars(j) for j in bounded.jobs] == [vars(j) for j in full.jobs]


def test_the_command_line_splits_users_applies_the_limit_and_writes_the_user_csvs(tmp_path, capsys):
    trace = tmp_path / "t.csv"
    lines = ["job_id,submit_time_s,duration_s,gpus,pods,team,user,status"]
    lines += [f"j{i},{i * 5},{600 + i},1,,T,," for i in range(40)]
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert main([str(trace), "--nodes", "1x8", "--split-users", "5-5", "--user-max-gpus", "2",
                 "--quiet", "--no-html", "--jobs-csv", "none", "--out", str(out)]) == 0  # fmt: skip
    printed = capsys.readouterr().out
    assert "users 5-5 per team (Zipf s=1, seed 36), per-user limit 2 GPUs" in printed
    assert "heaviest share" in printed
    per_user = (out / "per_user.csv").read_text().splitlines()
    assert per_user[0].startswith("policy,team,user,heaviest") and len(per_user) == 6
    assert (out / "user_summary.csv").exists()
    with pytest.raises(SystemExit, match="--user-max-gpus"):
        main([str(trace), "--nodes", "1x8", "--user-max-gpus", "-1"])


def test_a_trace_without_users_reports_no_user_figures():
    result = run(Trace([job(0, 0, 10, 1, "T")]), Cluster(1, 8, {"T": 8.0}, {}))
    assert result.users == [] and "heaviest_share" not in result.summary
    assert replace(job(0, 0, 10, 1, "T"), user="x").user == "x"
