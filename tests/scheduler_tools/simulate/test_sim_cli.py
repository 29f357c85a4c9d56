"""`python -m scheduler_tools.simulate` end to end: tables on stdout, CSV files and a self-contained
report.html (plotly.js inlined, no CDN), quotas scaled by --vc-scale, --predictor-eval."""

import csv
import gzip
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_tools.simulate.__main__ import main

ROOT = Path(__file__).resolve().parents[3]
JOBS_GZ = ("--jobs-csv", "gz")
JOBS_NONE = ("--jobs-csv", "none")

TRACE = """job_id,submit_time_s,duration_s,gpus,pods,team,user,status
a1,0,100,4,,A,,
a2,0,100,2,,A,,
a3,0,50,2,,A,,
b1,20,60,4,,B,,
b2,30,30,2,,B,,
a4,40,10,1,,A,,
"""


@pytest.fixture
def files(tmp_path):
    trace = tmp_path / "trace.csv"
    trace.write_text(TRACE)
    quotas = tmp_path / "quotas.csv"
    quotas.write_text("team,nodes,gpus\nA,2,8\nB,2,8\n")
    return trace, quotas


def test_cli_writes_tables_csvs_and_a_self_contained_html(files, tmp_path, capsys):
    trace, quotas = files
    out = tmp_path / "out"
    code = main(
        [
            *(str(trace), "--quotas", str(quotas), "--vc-scale", "0.5", "--gpus-per-node", "4"),
            *("--policy", "fifo-strict", "--policy", "kai", "--cycle-s", "10", "--out", str(out)),
            *("--quiet", "--predictor-eval"),
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    # vc-scale 0.5: each VC keeps 1 of its 2 nodes -> 2 nodes x 4 GPUs, quotas 4 and 4.
    assert "2x4 (8 GPUs), quotas quotas.csv x0.5" in printed
    assert "predictor (quantile 0.5" in printed
    with (out / "summary.csv").open() as handle:
        rows = {row["policy"]: row for row in csv.DictReader(handle)}
    assert set(rows) == {"fifo-strict", "kai"}
    # The exact figures of the hand-checked trace (tests/.../test_sim_engine.py).
    assert float(rows["fifo-strict"]["avg_queue_s"]) == pytest.approx(60)
    assert float(rows["kai"]["avg_queue_s"]) == pytest.approx(250 / 6, rel=1e-5)
    assert rows["kai"]["evictions"] == "2"
    with (out / "per_team.csv").open() as handle:
        teams = list(csv.DictReader(handle))
    assert {(r["policy"], r["team"], r["quota_gpus"]) for r in teams} == {
        ("fifo-strict", "A", "4"),
        ("fifo-strict", "B", "4"),
        ("kai", "A", "4"),
        ("kai", "B", "4"),
    }
    with (out / "jobs.csv").open() as handle:
        jobs = list(csv.DictReader(handle))
    assert len(jobs) == 12
    assert {j["job_id"]: j["jct_s"] for j in jobs if j["policy"] == "kai"}["a2"] == "180"
    page = (out / "report.html").read_text()
    assert re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE) is None  # no CDN
    assert "plotly.js v" in page  # the bundle itself, inlined
    assert "Plotly.newPlot" in page
    assert "Queueing time CDF" in page


def test_jobs_csv_can_be_gzipped_or_left_out(files, tmp_path):
    trace, _ = files
    out = tmp_path / "gz"
    main([str(trace), "--nodes", "2x4", "--out", str(out), "--quiet", "--no-html", *JOBS_GZ])
    with gzip.open(out / "jobs.csv.gz", "rt") as handle:
        assert len(list(csv.DictReader(handle))) == 6
    assert not (out / "report.html").exists()
    out = tmp_path / "none"
    main([str(trace), "--nodes", "2x4", "--out", str(out), "--quiet", "--no-html", *JOBS_NONE])
    assert sorted(p.name for p in out.iterdir()) == ["per_team.csv", "summary.csv"]


def test_cli_needs_a_cluster_size(files):
    trace, _ = files
    with pytest.raises(SystemExit):
        main([str(trace), "--quiet"])


def test_python_dash_m_runs_the_simulator_with_a_progress_bar(files):
    trace, quotas = files
    result = subprocess.run(
        [
            *(
                sys.executable,
                "-m",
                "scheduler_tools.simulate",
                str(trace),
                "--quotas",
                str(quotas),
            ),
            *("--gpus-per-node", "2", "--policy", "kai-backfill", "--policy", "sjf-oracle"),
        ],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
        check=True,
    )
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert "kai-backfill" in stdout and "sjf-oracle" in stdout
    assert "\r[kai-backfill] day" in stderr  # one line, rewritten in place
    assert "jobs done 6/6" in stderr


LAS_TRACE = """job_id,submit_time_s,duration_s,gpus,pods,team,user,status
long,0,18000,1,,A,,
quick,7200,1800,1,,A,,
"""


@pytest.mark.parametrize(("bands", "avg_queue"), [(None, 900), ("1,10", 900), ("5", 5400)])
def test_service_bands_set_the_thresholds_of_kai_las(tmp_path, bands, avg_queue):
    # quick arrives when long has held 2 GPU-hours: past a 1 GPU-hour threshold long is in a
    # higher band and quick preempts it (L3); below a 5 GPU-hour one both are in band 0 and
    # quick waits for long to end at 18000 (R4.3). Queueing: preempted, long waits 1800 s while
    # quick runs (average 900); not, quick waits 10800 s (average 5400).
    trace = tmp_path / "las.csv"
    trace.write_text(LAS_TRACE)
    out = tmp_path / "out"
    flags = ("--service-bands", bands) if bands else ()
    main([str(trace), "--nodes", "1x1", "--policy", "kai-las", "--cycle-s", "10", *flags,
          "--out", str(out), "--quiet", "--no-html", *JOBS_NONE])  # fmt: skip
    with open(out / "summary.csv") as handle:
        row = next(csv.DictReader(handle))
    assert float(row["avg_queue_s"]) == pytest.approx(avg_queue)


@pytest.mark.parametrize("bands", ["10,1", "0", "x", "", "1,1"])
def test_bad_service_bands_name_the_flag(files, capsys, bands):
    trace, _ = files
    with pytest.raises(SystemExit, match="--service-bands must be positive GPU-hours"):
        main([str(trace), "--nodes", "2x4", "--service-bands", bands, "--quiet"])
