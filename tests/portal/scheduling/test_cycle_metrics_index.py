"""The running totals' index keeps every counter that several writers add at once, in Redis as
production runs it (issue 35): the agent's errors and each project's start latency add new
counters from every worker and web process, and a counter missing from the index is missing
from /metrics."""

from __future__ import annotations

import threading
import uuid

import pytest
import redis
from django.test import override_settings

from portal.scheduling import cycle_metrics

REDIS_URL = "redis://127.0.0.1:6379/9"  # no other test uses it; the keys carry a prefix too


@pytest.fixture
def redis_cache():
    prefix = f"test-index-{uuid.uuid4().hex}"
    backend = {"BACKEND": "portal.core.cache.RedisCache",
               "LOCATION": REDIS_URL, "KEY_PREFIX": prefix}  # fmt: skip
    with override_settings(CACHES={"default": backend}):
        yield
    server = redis.Redis.from_url(REDIS_URL)
    for key in server.scan_iter(f"{prefix}:*"):
        server.delete(key)


def test_new_counters_added_at_once_by_several_writers_are_all_indexed(redis_cache):
    writers, each = 8, 40
    together = threading.Barrier(writers, timeout=30)

    def write(writer: int) -> None:
        together.wait()  # all start at once, as workers finishing their cycles together do
        for index in range(each):
            cycle_metrics._add_all({f"api_error|create|pods|{writer}-{index}": 1})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    totals = cycle_metrics.totals()
    expected = {f"api_error|create|pods|{w}-{i}" for w in range(writers) for i in range(each)}
    assert expected - totals.keys() == set()
    assert all(totals[name] == 1 for name in expected)


def test_the_embedded_defaults_cache_keeps_every_total_of_many_projects():
    """`make run` keeps the totals in process memory (LocMemCache), which culls a third of its
    entries once it holds MAX_ENTRIES (300 by default): the start latency of 40 projects alone
    is 600 counters, and culled counters went back to zero or out of /metrics."""
    from django.core.cache import cache

    cache.clear()
    cycle_metrics.record_starts([(f"team-{n}", 12.5) for n in range(40)])
    totals = cycle_metrics.totals()
    assert {totals.get(f"start_count|team-{n}") for n in range(40)} == {1}
    assert {totals.get(f"start_bucket|team-{n}|15.0") for n in range(40)} == {1}


def test_a_cycle_of_thousands_of_decisions_costs_a_few_increments(redis_cache, monkeypatch):
    """Issue 39: `record` added each decision to the totals on its own, three round trips to
    Redis each: 4,000 evictions of a reclaim were 12,000 calls in one cycle. They are summed
    first, and the index of counters is read once."""
    from django.core.cache import caches

    from scheduler import Decision

    calls, backend = [], caches["default"]  # what cycle_metrics' `cache` stands for
    for name in ("add", "incr", "get"):
        method = getattr(backend, name)
        monkeypatch.setattr(backend, name, lambda *a, _m=method, _n=name, **k: (
            calls.append(_n), _m(*a, **k))[1])  # fmt: skip
    evictions = [Decision("evict", ("old", f"j{i}"), "reclaim", "r") for i in range(4000)]
    starts = [Decision("start", ("new", f"j{i}"), "allocate", "a") for i in range(4000)]
    cycle_metrics.record("done", {"lock_s": 0.5, "plan_s": 0.2}, evictions + starts)
    assert len(calls) < 100, len(calls)
    totals = cycle_metrics.totals()
    assert totals["decision|evict"] == 4000 and totals["decision|start"] == 4000
    assert totals["eviction|reclaim"] == 4000 and totals["cycles|done"] == 1
    assert totals["count|lock_s"] == 1 and totals["sum_us|lock_s"] == 500000
