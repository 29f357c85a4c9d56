"""The embedded default's cycle: a daemon thread in the web process, no Celery, no Redis.

It runs the same `run_cycle` as the Celery task, after each committed change (a request sets
`portal.core.trigger.cycle_wanted`, the event this thread waits on), every
`ALLOT_CYCLE_INTERVAL_S`, and when an overview held back by its rate limit is due (`publish`).
Only the web process starts it (`portal/wsgi.py`, `portal/asgi.py`), so `migrate`, tests and
Celery workers never run a cycle behind anyone's back.
"""

from __future__ import annotations

import logging
import threading

from django.conf import settings
from django.db import close_old_connections, connection

from portal.audit.retention import prune_if_due
from portal.core.trigger import cycle_wanted
from portal.jobs import retention as job_history
from portal.scheduling.cycle import run_cycle
from portal.scheduling.publish import owed_in

logger = logging.getLogger(__name__)

_stop = threading.Event()
_started = threading.Event()
_start_lock = threading.Lock()
_thread: threading.Thread | None = None


def start_embedded_cycle() -> bool:
    """Start the timer thread once per process when the embedded cycle is on; True if running."""
    if not settings.ALLOT_EMBEDDED_CYCLE or settings.REDIS_URL:
        return False
    global _thread
    with _start_lock:
        if not _started.is_set():
            _stop.clear()
            cycle_wanted.clear()  # requests made before the thread ran are covered by its start
            _thread = threading.Thread(target=_loop, name="allot-cycle", daemon=True)
            _thread.start()
            _started.set()
    return True


def stop_embedded_cycle(timeout: float = 10.0) -> None:
    """Stop the timer thread after its current cycle (graceful shutdown, tests)."""
    with _start_lock:
        if _thread is not None and _started.is_set():
            _stop.set()
            cycle_wanted.set()
            _thread.join(timeout)
            _started.clear()


def _loop() -> None:
    while not _stop.is_set():
        timeout = settings.ALLOT_CYCLE_INTERVAL_S
        if (owed := owed_in()) is not None:  # a rate-limited overview goes out when it is due
            timeout = min(timeout, owed)
        cycle_wanted.wait(timeout=timeout)
        cycle_wanted.clear()
        if _stop.is_set():
            break
        try:
            run_cycle(wait=True)
        except Exception:  # keep the timer alive; the next tick retries from the database
            logger.exception("embedded scheduling cycle failed")
        try:
            prune_if_due()  # the audit log's retention, hourly (Celery beat's task in production)
            job_history.prune_if_due()  # ended jobs past ALLOT_JOB_RETENTION_DAYS, hourly too
        except Exception:
            logger.exception("audit log or job history pruning failed")
        finally:
            close_old_connections()
    connection.close()
