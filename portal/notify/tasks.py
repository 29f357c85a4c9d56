"""Celery tasks of notifications, on their own `notify` queue so a slow receiver never holds up
the worker that runs scheduling cycles."""

from __future__ import annotations

from celery import shared_task
from django.db import close_old_connections

from portal.notify import dispatch


@shared_task(name=dispatch.NOTIFY_TASK, ignore_result=True)
def notify_events(event_ids: list[int]) -> None:
    """Email, toasts and webhook deliveries for these job events."""
    try:
        dispatch.notify_events(event_ids)
    finally:
        close_old_connections()


@shared_task(name=dispatch.DELIVER_TASK, ignore_result=True)
def deliver_webhook(delivery_id: int) -> None:
    """One more attempt at a webhook delivery (re-enqueued with back-off on failure)."""
    try:
        dispatch.deliver(delivery_id)
    finally:
        close_old_connections()
