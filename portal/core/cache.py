"""Django's Redis cache with one client per process instead of one per request (issue 39).

Django keeps a cache backend per request context (`django.core.cache.caches` is context-local),
and under ASGI every request is a context of its own: with the stock backend each request made a
connection pool, connected to Redis and left the connection to the garbage collector; that was
a tenth of the web tier's CPU in `make bench-load` (a connection costs 1.4 ms, a command on a
kept one 0.05 ms). Here every backend object of one location and options shares one client,
whose connection pool (thread-safe, reset after a fork by redis-py) and `redis.Redis` objects
live as long as the process. Behaviour is otherwise Django's own.
"""

from __future__ import annotations

import threading

from django.core.cache.backends import redis as django_redis
from django.utils.functional import cached_property

_clients: dict[tuple[tuple[str, ...], str], SharedRedisCacheClient] = {}
_lock = threading.Lock()


class SharedRedisCacheClient(django_redis.RedisCacheClient):
    """Django's client, keeping a `redis.Redis` per connection pool instead of making one at
    every command (59 microseconds each)."""

    def __init__(self, servers, **options) -> None:
        super().__init__(servers, **options)
        self._redis: dict[int, object] = {}
        self._pool_lock = threading.Lock()

    def _get_connection_pool(self, write):
        with self._pool_lock:  # two threads must not each make a pool for one server
            return super()._get_connection_pool(write)

    def get_client(self, key=None, *, write=False):
        """The kept `redis.Redis` over the pool of the server that `write` selects."""
        pool = self._get_connection_pool(write)
        client = self._redis.get(id(pool))
        if client is None:
            client = self._redis.setdefault(id(pool), self._client(connection_pool=pool))
        return client


class RedisCache(django_redis.RedisCache):
    """`django.core.cache.backends.redis.RedisCache` whose instances share their client per
    process (settings.CACHES uses it whenever REDIS_URL is set)."""

    @cached_property
    def _cache(self) -> SharedRedisCacheClient:
        key = (tuple(self._servers), repr(sorted(self._options.items())))
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = SharedRedisCacheClient(self._servers, **self._options)
        return client
