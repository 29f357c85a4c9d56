"""The Redis cache keeps one client per process (issue 39): Django makes a cache backend per
request context, and with the stock backend each ASGI request connected to Redis anew."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest
import redis
from django.core.cache import caches
from django.core.cache.backends.redis import RedisCache as StockRedisCache
from django.test import override_settings

from portal.core.cache import RedisCache

REDIS_URL = "redis://127.0.0.1:6379/13"  # no other test uses it; the keys carry a prefix too


@pytest.fixture
def prefix():
    """A key prefix and Redis client name of the test's own (a new name is new options, so
    the test's backends start without a client kept by an earlier test)."""
    prefix = f"test-shared-{uuid.uuid4().hex}"
    yield prefix
    server = redis.Redis.from_url(REDIS_URL)
    for key in server.scan_iter(f"{prefix}:*"):
        server.delete(key)


def params(prefix: str) -> dict:
    return {"KEY_PREFIX": prefix, "OPTIONS": {"client_name": prefix}}


def connections(prefix: str) -> int:
    """The connections Redis has open under the test's client name."""
    listed = redis.Redis.from_url(REDIS_URL).client_list()
    return sum(1 for client in listed if client["name"] == prefix)


def test_backends_of_one_location_share_a_client_and_make_one_connection(prefix):
    backends = [RedisCache(REDIS_URL, params(prefix)) for _ in range(50)]
    backends[0].set("answer", 42)
    assert [backend.get("answer") for backend in backends] == [42] * 50
    assert len({id(backend._cache) for backend in backends}) == 1
    assert connections(prefix) == 1


def test_the_stock_backend_connects_once_per_backend_object(prefix):
    """What the shared client saves: the stock backend's objects each make a pool and connect."""
    backends = [StockRedisCache(REDIS_URL, params(prefix)) for _ in range(5)]
    for backend in backends:
        backend.get("answer")
    assert connections(prefix) == 5


def test_other_options_or_locations_keep_clients_of_their_own(prefix):
    one = RedisCache(REDIS_URL, params(prefix))
    other_db = RedisCache("redis://127.0.0.1:6379/12", params(prefix))
    other_options = RedisCache(REDIS_URL, params(f"{prefix}-other"))
    assert len({id(one._cache), id(other_db._cache), id(other_options._cache)}) == 3


def test_each_asgi_request_context_gets_a_backend_and_all_share_one_connection(prefix):
    """`caches` is context-local: every asyncio task (an ASGI request) gets a backend object of
    its own; here they all talk through the first one's connection."""
    backend = {"BACKEND": "portal.core.cache.RedisCache", "LOCATION": REDIS_URL, **params(prefix)}

    async def request(i: int):
        cache = caches["default"]
        cache.set(f"request-{i}", i)
        return cache, cache.get(f"request-{i}")

    async def requests():
        return await asyncio.gather(*(asyncio.create_task(request(i)) for i in range(20)))

    with override_settings(CACHES={"default": backend}):
        answers = asyncio.run(requests())
    assert [value for _, value in answers] == list(range(20))
    assert len({id(cache) for cache, _ in answers}) == 20  # Django's per-context objects
    assert len({id(cache._cache) for cache, _ in answers}) == 1
    assert connections(prefix) == 1


def test_threads_at_once_make_one_pool(prefix):
    backends = [RedisCache(REDIS_URL, params(prefix)) for _ in range(16)]
    start = threading.Barrier(len(backends), timeout=10)
    pools = []

    def use(backend):
        start.wait()
        backend.set("seen", 1)
        pools.append(id(backend._cache._get_connection_pool(write=True)))

    threads = [threading.Thread(target=use, args=(backend,)) for backend in backends]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(pools)) == 1
