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


@pytest.mark.parametrize(
    ("scenario", "started", "evicted"),
    [("fill", 64, 0), ("reclaim", 48, 48), ("steady", 0, 0)],
)
def test_with_resources_every_job_carries_cpu_and_memory_and_the_figures_hold(
    scenario, started, evicted
):
    result = subprocess.run(
        [sys.executable, "-m", "scheduler_tools.bench", "--scenario", scenario, "--nodes", "8",
         "--gpus-per-node", "8", "--projects", "4", "--jobs", "64", "--resources", "--json"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["resources"] is True
    assert (figures["started"], figures["evicted"]) == (started, evicted)
    assert "with CPU and memory" in result.stderr


def test_resources_put_cpu_and_memory_on_every_node_and_job():
    from scheduler_tools.bench import BUILDERS

    for build in BUILDERS.values():
        snapshot = build(4, 8, 2, 16, True)
        assert all(n.cpu_millis and n.memory_bytes for n in snapshot.nodes)
        assert snapshot.jobs and all(j.cpu_millis and j.memory_bytes for j in snapshot.jobs)
        plain = build(4, 8, 2, 16)
        assert all(n.cpu_millis is None for n in plain.nodes)
