"""Celery tasks of the scheduling app (their periodic schedule lives in `portal/celery.py`)."""

from __future__ import annotations

from celery import shared_task
from django.db import close_old_connections

from portal.core import trigger
from portal.scheduling import publish
from portal.scheduling.cycle import run_cycle as run_one_cycle

BUSY_RETRY_S = 0.5


@shared_task(name=trigger.CYCLE_TASK, ignore_result=True)
def run_cycle() -> dict:
    """One scheduling cycle. If another is running, ask for one more shortly after it.

    Returns a small summary (status, decisions, transitions, timings) for logs and tests.
    """
    trigger.clear_request()
    try:
        result = run_one_cycle(wait=False)
    finally:
        close_old_connections()
    if result.status != "done":
        trigger.request_cycle(countdown=BUSY_RETRY_S)
    elif (owed := publish.owed_in()) is not None:  # the rate-limited overview goes out on time
        trigger.request_cycle(countdown=owed)
    return {
        "status": result.status,
        "decisions": len(result.decisions),
        "transitions": len(result.transitions),
        "timings": result.timings,
    }
