"""Retention: entries older than ALLOT_AUDIT_RETENTION_DAYS are deleted, by this module only.

The Celery task `portal.audit.tasks.prune_audit_log` runs it hourly under beat; the embedded
default's cycle thread runs `prune_if_due` (at most hourly). The delete happens inside a
transaction that holds a `PrunePermit` row, the one case the database's append-only trigger
lets a DELETE through (migration 0002).
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from portal.audit.models import AuditEntry, PrunePermit

PRUNE_EVERY_S = 3600.0
logger = logging.getLogger(__name__)
_last_prune: list[float] = []  # monotonic time of this process's last prune
_lock = threading.Lock()


def prune(now: datetime | None = None) -> int:
    """Delete the entries older than the retention period; how many. 0 days keeps all."""
    days = settings.ALLOT_AUDIT_RETENTION_DAYS
    if not days:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=days)
    with transaction.atomic():
        permit = PrunePermit.objects.create()
        deleted = AuditEntry.objects.filter(time__lt=cutoff)._prune()
        PrunePermit.objects.filter(pk=permit.pk).delete()
    if deleted:
        logger.info("audit log: pruned %d entries older than %d days", deleted, days)
    return deleted


def prune_if_due() -> int | None:
    """`prune()` when this process has not pruned in the last hour (the embedded timer)."""
    with _lock:
        if _last_prune and time.monotonic() - _last_prune[-1] < PRUNE_EVERY_S:
            return None
        _last_prune[:] = [time.monotonic()]
    return prune()
