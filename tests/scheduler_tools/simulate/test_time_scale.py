"""--time-scale: arrivals compressed (every submit time x F), durations kept, order kept, and a
non-positive factor refused by the command line."""

import csv

import pytest

from scheduler_tools.simulate.__main__ import main
from scheduler_tools.simulate.trace import read_trace

TRACE = """job_id,submit_time_s,duration_s,gpus,pods,team,user,status
late,400,30,1,,,,
first,0,100,0.5,,,,
tie-a,200,50,2,,,,
tie-b,200,60,1,,,,
mid,100,10,8,,,,
"""


@pytest.fixture
def trace_path(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    return path


def test_submit_times_are_multiplied_and_durations_kept(trace_path):
    plain = read_trace(trace_path)
    quarter = read_trace(trace_path, time_scale=0.25)
    assert [j.submit_s for j in quarter.jobs] == [0.0, 25.0, 50.0, 50.0, 100.0]
    assert [j.submit_s for j in quarter.jobs] == [j.submit_s * 0.25 for j in plain.jobs]
    assert [j.duration_s for j in quarter.jobs] == [j.duration_s for j in plain.jobs]
    assert [j.duration_s for j in quarter.jobs] == [100.0, 10.0, 50.0, 60.0, 30.0]
    # Everything but the submit time is the same job.
    assert [(j.job_id, j.gpus_per_pod, j.pods, j.team) for j in quarter.jobs] == [
        (j.job_id, j.gpus_per_pod, j.pods, j.team) for j in plain.jobs
    ]


def test_order_is_kept_including_ties_in_row_order(trace_path):
    for scale in (1.0, 0.5, 0.125, 3.0):
        jobs = read_trace(trace_path, time_scale=scale).jobs
        assert [j.job_id for j in jobs] == ["first", "mid", "tie-a", "tie-b", "late"]


def test_default_scale_is_one_and_limit_applies_after_sorting(trace_path):
    assert read_trace(trace_path) == read_trace(trace_path, time_scale=1.0)
    limited = read_trace(trace_path, time_scale=0.5, limit=2).jobs
    assert [(j.job_id, j.submit_s) for j in limited] == [("first", 0.0), ("mid", 50.0)]


def test_scale_combines_with_round_up_fractions(trace_path):
    job = read_trace(trace_path, round_up_fractions=True, time_scale=0.5).jobs[0]
    assert (job.job_id, job.submit_s, job.gpus_per_pod, job.requested_gpus) == (
        "first",
        0.0,
        1.0,
        0.5,
    )


@pytest.mark.parametrize("bad", [0.0, -0.5, float("nan"), float("inf")])
def test_reader_refuses_a_non_positive_scale(trace_path, bad):
    with pytest.raises(ValueError, match="time_scale must be a positive number"):
        read_trace(trace_path, time_scale=bad)


@pytest.mark.parametrize("bad", ["0", "-0.25", "nan", "inf"])
def test_cli_refuses_a_non_positive_scale(trace_path, bad):
    with pytest.raises(SystemExit) as exit_info:
        main([str(trace_path), "--nodes", "1x8", "--time-scale", bad, "--quiet"])
    assert "--time-scale must be a positive number" in str(exit_info.value.code)


def test_cli_refuses_a_scale_that_is_not_a_number(trace_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main([str(trace_path), "--nodes", "1x8", "--time-scale", "fast", "--quiet"])
    assert exit_info.value.code == 2  # argparse's usage error
    assert "--time-scale" in capsys.readouterr().err


def test_cli_labels_the_setting_and_replays_compressed_arrivals(trace_path, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(trace_path), "--nodes", "1x8", "--policy", "fifo-strict", "--cycle-s", "10"]
    code = main([*argv, "--time-scale", "0.25", "--out", str(out), "--no-html", "--quiet"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "1x8 (8 GPUs), equal quotas over 1 team(s), arrivals x0.25" in printed
    with (out / "jobs.csv").open() as handle:
        jobs = {row["job_id"]: row for row in csv.DictReader(handle)}
    assert float(jobs["mid"]["submit_s"]) == pytest.approx(25)
    assert float(jobs["late"]["submit_s"]) == pytest.approx(100)
    with (out / "summary.csv").open() as handle:
        (row,) = list(csv.DictReader(handle))
    assert "arrivals x0.25" in row["setting"]


def test_cli_without_the_flag_prints_no_scale(trace_path, capsys):
    assert main([str(trace_path), "--nodes", "1x8", "--policy", "fifo-strict", "--quiet"]) == 0
    assert "arrivals x" not in capsys.readouterr().out
