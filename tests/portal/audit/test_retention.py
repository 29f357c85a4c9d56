"""Retention: entries older than ALLOT_AUDIT_RETENTION_DAYS are pruned - and only those - hourly
by Celery beat in production and by the embedded timer in the embedded default (issue 22)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.audit import retention
from portal.audit.models import AuditEntry, PrunePermit
from portal.audit.services import new_entry
from portal.audit.tasks import PRUNE_TASK, prune_audit_log
from portal.celery import app

pytestmark = pytest.mark.django_db


def aged(days: float, label: str) -> AuditEntry:
    entry = new_entry("node.changed", ("node", "1", label))
    entry.time = timezone.now() - timedelta(days=days)
    entry.save()
    return entry


@pytest.fixture
def log(db):
    return [aged(400, "older"), aged(366, "just-older"), aged(364, "just-younger"),
            aged(0, "today")]  # fmt: skip


def labels() -> list[str]:
    return list(AuditEntry.objects.order_by("time").values_list("target_label", flat=True))


def test_only_entries_past_the_retention_are_pruned(log, settings):
    settings.ALLOT_AUDIT_RETENTION_DAYS = 365
    assert prune_audit_log() == 2  # the Celery task
    assert labels() == ["just-younger", "today"]
    assert not PrunePermit.objects.exists()  # the permit lives inside the pruning only


def test_a_shorter_retention_prunes_more(log, settings):
    settings.ALLOT_AUDIT_RETENTION_DAYS = 30
    assert retention.prune() == 3
    assert labels() == ["today"]


def test_zero_days_keeps_everything(log, settings):
    settings.ALLOT_AUDIT_RETENTION_DAYS = 0
    assert retention.prune() == 0
    assert len(labels()) == 4


def test_the_embedded_timer_prunes_at_most_hourly(log, settings, monkeypatch):
    settings.ALLOT_AUDIT_RETENTION_DAYS = 365
    monkeypatch.setattr(retention, "_last_prune", [])
    assert retention.prune_if_due() == 2
    aged(500, "late")
    assert retention.prune_if_due() is None  # within the hour: not again
    monkeypatch.setattr(retention, "_last_prune", [time.monotonic() - 3601])  # an hour ago
    assert retention.prune_if_due() == 1


def test_beat_runs_the_pruning_hourly():
    (entry,) = [e for e in app.conf.beat_schedule.values() if e["task"] == PRUNE_TASK]
    assert entry["schedule"] == 3600.0
    assert PRUNE_TASK in app.tasks
