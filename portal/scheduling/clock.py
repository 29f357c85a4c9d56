"""Setting the replay clock (`portal.core.clock`, `ALLOT_REPLAY_CLOCK`): forward only.

The REST API (`/api/v1/scheduler/clock/`) sets it through `set_clock`; who may is asked of
`portal.access.may_set_clock` by the caller. A clock that moved backwards would let runs end
before they began and budgets count negative time, so an earlier time is refused, naming the
field, and the row is locked while it is compared and written (two admins advancing at once
both count).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from portal.core import clock
from portal.scheduling.models import ReplayClock

ROW = 1


class Backwards(ValueError):
    """The time asked is before the clock's: (field, reason) for a 400."""

    def __init__(self, field: str, reason: str):
        super().__init__(reason)
        self.field = field
        self.reason = reason


def stored() -> datetime | None:
    """The time set, or None when it was never set (the clock then reads the wall clock)."""
    return ReplayClock.objects.filter(id=ROW).values_list("now", flat=True).first()


def set_clock(*, now: datetime | None = None, advance_seconds: float | None = None) -> datetime:
    """Set the clock to `now`, or move it `advance_seconds` ahead of its reading; never back."""
    with transaction.atomic():
        row = ReplayClock.objects.select_for_update().filter(id=ROW).first()
        reading = row.now if row is not None else timezone.now()
        if advance_seconds is not None:
            target, field = reading + timedelta(seconds=advance_seconds), "advance_seconds"
        else:
            target, field = now, "now"
        if target < reading:
            raise Backwards(
                field,
                f"the clock never moves backwards: it reads {reading.isoformat()}, "
                f"{target.isoformat()} is earlier",
            )
        ReplayClock.objects.update_or_create(
            id=ROW, defaults={"now": target, "set_at": timezone.now()}
        )
    return clock.now()
