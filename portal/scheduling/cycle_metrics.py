"""How long cycles take and how long they hold the cluster lock, for operators.

Each cycle records its timings (seconds): `observe_s` (the agent's observation and
reconciliation, no lock held), `lock_s` (the transaction under the cluster lock: snapshot, plan,
commit), `snapshot_s`, `plan_s`, `commit_s`, and `carry_out_s` (the agent's starts and stops,
after the commit). The latest `WINDOW` cycles are kept in the cache, so every process sees the
cycles of every worker (Redis in production, process memory in the embedded default);
`summary()` is what `GET /api/v1/scheduler/cycles/` returns.

For Prometheus (`/metrics`, portal.web.metrics) each cycle also adds to running totals in the
same cache: a histogram per stage (a counter per bucket, a sum, a count), decisions by kind and
evictions by the action that decided them. Every worker adds with the cache's atomic `incr`
(Redis INCR in production) and the web process exposes the totals: several workers never
overwrite each other, nothing is lost when a worker restarts, and no scrape target is needed
per worker (prometheus-client's multiprocess mode would need a directory shared by every
process, which workers on other hosts or pods do not have).

The agent's failed API calls and back-offs (`agents.base.AgentCounts`) go the same way: each
cycle takes what its process's agent counted since the last (`record_agent`), and so does each
scrape for the web process's own agent (its status and log reads).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping

from django.core.cache import cache

from agents.base import AgentCounts

KEY = "allot:cycle:metrics"
TOTALS = "allot:cycle:totals:"  # + a counter's name; integers only (sums in microseconds)
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# How long jobs wait from submission to their first start: seconds to a day
START_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0,
                 21600.0, 86400.0)  # fmt: skip
WINDOW = 100
INDEX_LOCK = "allot:cycle:totals-index-lock"
INDEX_LOCK_S = 2
STAGES = ("observe_s", "lock_s", "snapshot_s", "plan_s", "commit_s", "carry_out_s")


def record(status: str, timings: dict[str, float], decisions=()) -> None:
    """Keep one cycle's outcome and timings (the oldest beyond `WINDOW` are dropped), and add
    them and its `decisions` (scheduler.model.Decision) to the running totals: summed by counter
    first, so a cycle of 4,000 decisions costs a few increments, not three round trips to the
    cache per decision (issue 39: a twentieth of the worker's CPU in bench-k8s's reclaim)."""
    entry = {"at": time.time(), "status": status, **{k: round(v, 6) for k, v in timings.items()}}
    recent = cache.get(KEY) or []
    cache.set(KEY, [*recent[-(WINDOW - 1) :], entry], timeout=None)
    added: Counter[str] = Counter({f"cycles|{status}": 1})
    for stage, seconds in timings.items():
        for bound in BUCKETS:
            if seconds <= bound:
                added[f"bucket|{stage}|{bound}"] += 1
        added[f"count|{stage}"] += 1
        added[f"sum_us|{stage}"] += round(seconds * 1e6)
    for decision in decisions:
        added[f"decision|{decision.kind}"] += 1
        if decision.kind == "evict":
            added[f"eviction|{decision.action}"] += 1
    _add_all(added)


def record_starts(latencies: list[tuple[str, float]]) -> None:
    """Add the submit-to-start latencies (project, seconds) of the jobs a cycle started for the
    first time to the project's histogram (a restart after an eviction is not a first start).
    Summed by counter first: a fill of thousands of jobs costs a few increments per project."""
    added: Counter[str] = Counter()
    for project, seconds in latencies:
        for bound in START_BUCKETS:
            if seconds <= bound:
                added[f"start_bucket|{project}|{bound}"] += 1
        added[f"start_count|{project}"] += 1
        added[f"start_sum_us|{project}"] += round(seconds * 1e6)
    _add_all(added)


def record_agent(counts: AgentCounts) -> None:
    """Add the agent's failed API calls and back-offs (taken since the last time) to the totals."""
    added = {f"api_error|{verb}|{resource}|{code}": failed
             for (verb, resource, code), failed in counts.api_errors.items()}  # fmt: skip
    added |= {f"backoff|{scope}": begun for scope, begun in counts.backoffs.items()}
    added |= {f"backoff_us|{scope}": round(seconds * 1e6)
              for scope, seconds in counts.backoff_s.items()}  # fmt: skip
    _add_all(added)


def _add_all(added: Mapping[str, int]) -> None:
    """Add each amount to its counter; the index of counters is read once for them all."""
    if not added:
        return
    for name, amount in added.items():
        key = TOTALS + name
        cache.add(key, 0, timeout=None)  # only when missing; incr on a missing key raises
        if amount:
            cache.incr(key, amount)
    known = set(cache.get(TOTALS + "names") or [])
    for name in added:
        if name not in known:
            _index(name)


def _index(name: str) -> None:
    """Add `name` to the index of counters (so a scrape reads them without a key scan). The
    index is one list read and written whole: two processes adding new names at once would
    each write the list without the other's name, so the writers take turns, holding a lock
    made with the cache's atomic `add` (Redis SET NX) that expires should its holder die."""
    deadline = time.monotonic() + INDEX_LOCK_S
    while not (held := cache.add(INDEX_LOCK, 1, timeout=INDEX_LOCK_S)):
        if time.monotonic() >= deadline:
            break  # the holder died holding it: its expiry is due, write anyway
        time.sleep(0.002)
    try:
        names = cache.get(TOTALS + "names") or []
        if name not in names:
            cache.set(TOTALS + "names", [*names, name], timeout=None)
    finally:
        if held:
            cache.delete(INDEX_LOCK)


def totals() -> dict[str, int]:
    """Every running total by name ("bucket|plan_s|0.1", "eviction|reclaim", ...)."""
    names = cache.get(TOTALS + "names") or []
    values = cache.get_many([TOTALS + name for name in names])
    return {name: int(values.get(TOTALS + name, 0)) for name in names}


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
