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
            cycle_metrics._add(f"api_error|create|pods|{writer}-{index}")

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
