"""Audit entries: append-only rows, refused an UPDATE or DELETE by the model, its queryset and
(migration 0002) the database itself.

The actor is kept twice: a nullable foreign key to the account (set to NULL when the account is
deleted, the one change the database allows) and the username as text, so an entry still says
who it was after the account is gone.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

SYSTEM = "system"  # the actor of what no request did: Celery tasks, management commands, timers


class AppendOnlyError(Exception):
    """An audit entry was to be changed or deleted: only retention pruning deletes them."""


class AuditQuerySet(models.QuerySet):
    """Reads only: `update()` and `delete()` raise; `portal.audit.retention` prunes."""

    def update(self, **kwargs):
        raise AppendOnlyError("audit entries are append-only: they are never updated")

    def delete(self):
        raise AppendOnlyError(
            "audit entries are append-only: only the retention pruning deletes them"
        )

    def _prune(self) -> int:
        """Delete these entries (portal.audit.retention only, inside its permit)."""
        deleted, _ = super().delete()
        return deleted


class AuditEntry(models.Model):
    """One thing someone did: `action` (a dotted code such as `job.submitted`) to a target, with
    `changes` as {field: [before, after]}."""

    time = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_username = models.CharField(max_length=150, db_index=True)
    address = models.GenericIPAddressField(null=True, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    target_type = models.CharField(max_length=32, blank=True, default="")
    target_id = models.CharField(max_length=64, blank=True, default="")
    target_label = models.CharField(max_length=255, blank=True, default="")
    changes = models.JSONField(default=dict, blank=True)
    note = models.CharField(max_length=255, blank=True, default="")

    objects = AuditQuerySet.as_manager()

    class Meta:
        ordering = ["-time", "-id"]
        indexes = [models.Index(fields=["target_type", "target_label"], name="audit_target")]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.time:%Y-%m-%d %H:%M:%S} {self.actor_username} {self.action}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise AppendOnlyError("audit entries are append-only: they are never updated")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise AppendOnlyError(
            "audit entries are append-only: only the retention pruning deletes them"
        )


class PrunePermit(models.Model):
    """A row here, inside the pruning transaction only, lets the database delete audit entries
    (the trigger of migration 0002 refuses every other DELETE). Other transactions never see it:
    it is inserted and deleted in the one transaction that prunes."""

    created_at = models.DateTimeField(default=timezone.now)
