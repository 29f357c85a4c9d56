"""The what-if's accuracy script (scheduler_tools/whatif_accuracy.py, issue 37) on a small
trace: seeded, it prints the same figures twice; with every run time known and no later
arrival, the what-if's predicted starts are the replay's for most jobs (the median error is 0),
and every pending job is counted once, compared or set apart."""

from __future__ import annotations

import json
import random

from scheduler_tools import whatif_accuracy


def small_trace(tmp_path):
    rng = random.Random(1)
    rows = ["job_id,submit_time_s,duration_s,gpus,pods,team,user,status,vc_submit_time_s"]
    for i in range(60):
        team = "ta" if i % 2 else "tb"
        rows.append(f"j{i},{i * 300},{rng.choice([1800, 3600, 5400])},"
                    f"{rng.choice([2, 4, 8])},,{team},,,")  # fmt: skip
    trace = tmp_path / "trace.csv"
    trace.write_text("\n".join(rows) + "\n")
    quotas = tmp_path / "quotas.csv"
    quotas.write_text("team,nodes,gpus\nta,2,16\ntb,2,16\n")
    return str(trace), str(quotas)


def figures(capsys, trace, quotas) -> dict:
    whatif_accuracy.main([trace, "--quotas", quotas, "--vc-scale", "0.5", "--moments", "2",
                          "--seed", "7", "--json"])  # fmt: skip
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def test_seeded_figures_repeat_and_an_exact_predictor_in_a_closed_replay_is_right(tmp_path, capsys):
    trace, quotas = small_trace(tmp_path)
    first = figures(capsys, trace, quotas)
    assert figures(capsys, trace, quotas) == first
    closed = first["figures"]["closed"]
    assert closed["jobs"] > 0 and closed["median_min"] == 0.0
    whole = first["figures"]["whole"]["jobs"]
    assert whole + first["unplaced_whatif"] + first["unplaced_replay"] == first["pending"]
