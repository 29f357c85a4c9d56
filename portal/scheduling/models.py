"""The replay clock's one row (`portal.core.clock`): kept in the database so that every process
of a scratch portal reads the same time."""

from __future__ import annotations

from django.db import models


class ReplayClock(models.Model):
    """The time a cluster admin set (`portal.scheduling.clock`); one row, id 1, or none (unset)."""

    now = models.DateTimeField()
    set_at = models.DateTimeField(help_text="the wall-clock time it was last set")
