"""Job history's retention: jobs that ended more than ALLOT_JOB_RETENTION_DAYS ago are deleted.

Only ended jobs go (Succeeded, Failed, TimedOut, Stopped, by `finished_at`); a pending or running
job never does, however old. Their logs go with them; their runs (for the GPU-hour accounting)
and events stay, as a deleted job's do. The Celery task `portal.jobs.tasks.prune_job_history`
runs it hourly under beat; the embedded default's cycle thread runs `prune_if_due` (at most
hourly).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from portal.jobs.models import ENDED, Job, JobRun

PRUNE_EVERY_S = 3600.0
BATCH = 1000  # jobs deleted per statement group, so a first prune of a long history stays short
logger = logging.getLogger(__name__)
_last_prune: list[float] = []  # monotonic time of this process's last prune
_lock = threading.Lock()


def prune(now: datetime | None = None) -> int:
    """Delete the jobs that ended before the retention period; how many. 0 days keeps all."""
    days = settings.ALLOT_JOB_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    old = Job.objects.filter(status__in=ENDED, finished_at__lt=cutoff)
    deleted = 0
    while ids := list(old.values_list("id", flat=True)[:BATCH]):
        # the status is checked again by the DELETE itself: a job resumed meanwhile stays
        going = Job.objects.filter(id__in=ids, status__in=ENDED)
        JobRun.objects.filter(job__in=going).update(logs="")  # the runs stay, their logs not
        deleted += going.delete()[1].get("jobs.Job", 0)
    if deleted:
        logger.info("job history: pruned %d jobs that ended more than %d days ago", deleted, days)
    return deleted


def prune_if_due() -> int | None:
    """`prune()` when this process has not pruned in the last hour (the embedded timer)."""
    with _lock:
        if _last_prune and time.monotonic() - _last_prune[-1] < PRUNE_EVERY_S:
            return None
        _last_prune[:] = [time.monotonic()]
    return prune()
