"""The portal's "now" for the scheduling cycle, budgets, runs' accounting and reservations.

Off (the default: `ALLOT_REPLAY_CLOCK` unset), `now()` is `django.utils.timezone.now()`, one
setting read more than before. On (a scratch portal with DEBUG only: the system check
`portal.scheduling.checks` refuses it otherwise), it is the time a cluster admin last set through
`/api/v1/scheduler/clock/`, which stands still between settings and never moves backwards: a
scenario that moves its clock by hours (a budget's term, a reservation's slot) then replays
through REST as it does through the core (`scripts/replay_scenario.py`). Until first set it is the
wall clock.

The clock is kept in the database (one row, `portal.scheduling.models.ReplayClock`) so that every
process of the portal (web, Celery worker, embedded timer) reads the same time. This lowest layer
has no models: the scheduling app installs the reader when it is ready (`install`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.conf import settings
from django.utils import timezone

_stored: Callable[[], datetime | None] = lambda: None  # noqa: E731 - until `install`


def install(reader: Callable[[], datetime | None]) -> None:
    """Where the replay clock's time is read from (None: not set yet)."""
    global _stored
    _stored = reader


def replaying() -> bool:
    """True when the replay clock is on (`ALLOT_REPLAY_CLOCK`)."""
    return getattr(settings, "ALLOT_REPLAY_CLOCK", False)


def now() -> datetime:
    """The aware current time: the wall clock, or the replay clock when it is on and set."""
    if not replaying():
        return timezone.now()
    return _stored() or timezone.now()
