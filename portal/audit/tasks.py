"""Celery tasks of the audit log (their periodic schedule lives in `portal/celery.py`)."""

from __future__ import annotations

from celery import shared_task

from portal.audit import retention

PRUNE_TASK = "portal.audit.tasks.prune_audit_log"


@shared_task(name=PRUNE_TASK, ignore_result=True)
def prune_audit_log() -> int:
    """Delete the audit entries older than ALLOT_AUDIT_RETENTION_DAYS; how many."""
    return retention.prune()
