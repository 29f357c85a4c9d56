"""Celery tasks of jobs (their periodic schedule lives in `portal/celery.py`)."""

from __future__ import annotations

from celery import shared_task

from portal.jobs import retention

PRUNE_TASK = "portal.jobs.tasks.prune_job_history"


@shared_task(name=PRUNE_TASK, ignore_result=True)
def prune_job_history() -> int:
    """Delete the jobs that ended more than ALLOT_JOB_RETENTION_DAYS ago; how many."""
    return retention.prune()
