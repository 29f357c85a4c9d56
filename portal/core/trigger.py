"""Ask for a scheduling cycle soon: called in `transaction.on_commit` after any change.

With Redis (production) the request becomes one Celery task, coalesced: a Redis key marks a cycle
as requested, so 4,000 submissions in a burst enqueue a handful of cycles, not 4,000. The task
clears the key before it reads the database, so a change committed after that read asks again.
Without Redis (the embedded default) the request sets `cycle_wanted`, the event the in-process
timer thread (`portal.scheduling.embedded`) waits on.

This module sits beneath every app so that any service can ask for a cycle: it names the task
instead of importing it, and owns the event instead of importing the timer.
"""

from __future__ import annotations

import logging
import threading
from functools import cache

from django.conf import settings
from django.db import transaction

from portal.celery import CYCLE_TASK, app

logger = logging.getLogger(__name__)

REQUESTED_KEY = "allot:cycle:requested"
REQUEST_TTL_S = 10  # a lost task (worker killed) blocks new requests at most this long
TASK_EXPIRES_S = 30

cycle_wanted = threading.Event()
"""Set by a request without Redis; the embedded timer wakes on it and clears it."""


@cache
def _redis(url: str):
    import redis

    return redis.Redis.from_url(url)


def request_cycle(countdown: float = 0.0) -> None:
    """Ask for a cycle; never raises (beat and the timer run cycles anyway)."""
    if not settings.REDIS_URL:
        cycle_wanted.set()
        return
    try:
        if _redis(settings.REDIS_URL).set(REQUESTED_KEY, 1, nx=True, ex=REQUEST_TTL_S):
            app.send_task(CYCLE_TASK, countdown=countdown, expires=TASK_EXPIRES_S)
    except Exception:
        logger.exception("could not request a scheduling cycle (beat will run one)")


def request_cycle_on_commit() -> None:
    """Ask for a scheduling cycle once the current transaction commits."""
    transaction.on_commit(request_cycle)


def clear_request() -> None:
    """Called by the task before it reads the database: later changes must ask again."""
    if settings.REDIS_URL:
        _redis(settings.REDIS_URL).delete(REQUESTED_KEY)
