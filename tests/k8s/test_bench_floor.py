"""`make bench-k8s` measures the stock kube-scheduler beside Allot in every run (issue 39): the
floor places the same jobs as plain pods created straight on the same lab, before Allot's stack
runs, and the last JSON line carries both times and their ratio. Run here at a tiny shape (the
figures themselves are the benchmark's, not a test's): every floor pod Running, the floor's pods
gone before Allot's fill (which then places all of its own), and the ratio computed from the
two times."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.k8s.lab import ROOT, lab_command

pytestmark = [pytest.mark.k8s, pytest.mark.slow]


def test_bench_k8s_runs_the_stock_kube_scheduler_first_and_reports_the_ratio():
    check = lab_command("check")
    if check.returncode:
        message = f"the lab's binaries are not built: `scripts/k8s-lab build`\n{check.stdout}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "k8s_bench.py"), "--nodes", "4",
         "--projects", "2", "--jobs", "24", "--idle-s", "1", "--no-reclaim", "--web", "1",
         "--stall-s", "90", "--timeout", "240"],
        capture_output=True, text=True, timeout=900, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    floor = summary["floor"]
    assert floor["done"] and floor["running"] == 24, floor
    assert "kube-scheduler" in floor["cpu_s"], floor  # measured beside the control plane
    assert summary["running"] == 24  # Allot's fill: the floor's pods had left the nodes
    assert summary["fill_vs_floor"] == round(summary["end_to_end_s"] / floor["elapsed_s"], 2)
    assert "floor: 24/24 pods Running" in done.stdout
