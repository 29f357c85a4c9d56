"""How long cycles take and how long they hold the cluster lock, for operators.

Each cycle records its timings (seconds): `observe_s` (the agent's observation and
reconciliation, no lock held), `lock_s` (the transaction under the cluster lock: snapshot, plan,
commit), `snapshot_s`, `plan_s`, `commit_s`, and `carry_out_s` (the agent's starts and stops,
after the commit). The latest `WINDOW` cycles are kept in the cache, so every process sees the
cycles of every worker (Redis in production, process memory in the embedded default);
`summary()` is what `GET /api/v1/scheduler/cycles/` returns.
"""

from __future__ import annotations

import time

from django.core.cache import cache

KEY = "allot:cycle:metrics"
WINDOW = 100
STAGES = ("observe_s", "lock_s", "snapshot_s", "plan_s", "commit_s", "carry_out_s")


def record(status: str, timings: dict[str, float]) -> None:
    """Keep one cycle's outcome and timings (the oldest beyond `WINDOW` are dropped)."""
    entry = {"at": time.time(), "status": status, **{k: round(v, 6) for k, v in timings.items()}}
    recent = cache.get(KEY) or []
    cache.set(KEY, [*recent[-(WINDOW - 1) :], entry], timeout=None)


def summary() -> dict:
    """`{"cycles", "statuses", "last", "stages": {stage: {"mean_s", "p95_s", "max_s"}}}` over the
    kept cycles; `last` is the newest cycle's entry (None before any cycle)."""
    recent = cache.get(KEY) or []
    statuses: dict[str, int] = {}
    for entry in recent:
        statuses[entry["status"]] = statuses.get(entry["status"], 0) + 1
    return {
        "cycles": len(recent),
        "statuses": statuses,
        "last": recent[-1] if recent else None,
        "stages": {stage: _spread([e[stage] for e in recent if stage in e]) for stage in STAGES},
    }


def _spread(values: list[float]) -> dict | None:
    if not values:
        return None
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {"mean_s": sum(ordered) / len(ordered), "p95_s": p95, "max_s": ordered[-1]}
