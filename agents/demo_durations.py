"""How long the simulated cluster's training jobs run in the demo (issue 34 item 14).

A new install's simulated training jobs ran until stopped, so history, Succeeded jobs and run-time
learning stayed empty. With ALLOT_SIM_DEMO=1 (`make run` sets it) a training job submitted
without `sim_duration_s` runs for a duration drawn from the Microsoft Philly trace (the 50,000
jobs of `philly_50k.csv`, a 32.5-day window of 11 teams; its job table derived by PCS, OSDI'24,
MIT licence, from Philly's CC BY 4.0 trace), scaled by ALLOT_SIM_DEMO_SCALE (1/60: an hour of the
trace is a minute of the demo) and never under `MIN_S`. The draw is a function of the job's id,
so every process agrees on it without storing it. Standard library only, as all of `agents/`.
"""

from __future__ import annotations

import hashlib

MIN_S = 5.0

# Percentiles 0, 1, ..., 100 of the trace's job durations in seconds (median 973 s = 16 min,
# p90 26,829 s = 7.5 h, the longest 36 days).
# fmt: off
PERCENTILES_S = (
    1, 13, 18, 25, 32, 40, 46, 50, 54, 57, 59, 61, 64, 66, 68, 70, 72, 75, 79, 85, 94, 105,
    119, 135, 152, 167, 180, 193, 212, 234, 264, 292, 316, 344, 386, 441, 481, 508, 536,
    579, 606, 639, 675, 717, 753, 793, 832, 868, 897, 929, 973, 1015, 1064, 1112, 1159,
    1202, 1252, 1300, 1352, 1401, 1452, 1511, 1576, 1636, 1715, 1788, 1871, 1952, 2042,
    2165, 2304, 2465, 2703, 3101, 3360, 3591, 3844, 4071, 4308, 4652, 5418, 5955, 6261,
    7267, 8876, 10434, 12640, 14473, 16694, 20463, 26829, 34375, 47227, 62773, 76715, 98077,
    140965, 196604, 316097, 537846, 3123639,
)
# fmt: on


def demo_duration_s(job_id: int, scale: float) -> float:
    """The demo's run time of job `job_id`: a Philly duration (interpolated between its
    percentiles at a point fixed by the id) times `scale`, at least MIN_S."""
    digest = hashlib.sha256(f"allot-demo:{job_id}".encode()).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64 * 100  # 0 <= u < 100
    low = int(u)
    fraction = u - low
    seconds = PERCENTILES_S[low] + (PERCENTILES_S[low + 1] - PERCENTILES_S[low]) * fraction
    return max(MIN_S, seconds * scale)
