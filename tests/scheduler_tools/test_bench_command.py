"""`python -m scheduler_tools.bench` runs every shape and ends --json output with the figures."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("scenario", "started", "evicted"),
    [("fill", 64, 0), ("reclaim", 48, 48), ("steady", 0, 0)],
)
def test_it_reports_started_evicted_and_times_as_json(scenario, started, evicted):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "scheduler_tools.bench",
            "--scenario",
            scenario,
            "--nodes",
            "8",
            "--gpus-per-node",
            "8",
            "--projects",
            "4",
            "--jobs",
            "64",
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["started"] == started
    assert figures["evicted"] == evicted
    assert figures["cycles"] >= 1
    assert figures["total_s"] >= figures["cycle_s"] > 0
