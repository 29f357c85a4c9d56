"""Who wants to hear about which job events, and every webhook delivery attempted."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from portal.tenancy.models import Project

# JobEvent kinds people are told about, and how the notification names them
NOTIFIED = {
    "running": "started",
    "evicted": "preempted",
    "succeeded": "succeeded",
    "failed": "failed",
    "timed out": "timed out",
    "warning": "idle or time-limit warning",
    "stuck": "stuck",
    "budget": "budget threshold reached",  # R20.5: a project event, no job (portal.budgets)
    "reservation": "reservation about to start",  # R22: a project event (portal.reservations)
}


class Preference(models.Model):
    """A user's notification settings (defaults when there is no row: email and browser on)."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    email = models.BooleanField(default=True)
    browser = models.BooleanField(default=True)


def new_secret() -> str:
    return secrets.token_hex(32)


class Webhook(models.Model):
    """A project's endpoint that receives its job events as signed JSON."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=2000)
    secret = models.CharField(max_length=128, default=new_secret)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.project.name} -> {self.url}"


class Delivery(models.Model):
    """One event sent (or being sent) to one webhook: the project admin's delivery log."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=32)
    job_name = models.CharField(max_length=63)
    payload = models.JSONField()
    attempts = models.PositiveIntegerField(default=0)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    delivered = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
