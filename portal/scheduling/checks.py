"""System checks of the scheduling settings: the replay clock on a real portal is refused."""

from __future__ import annotations

from django.conf import settings
from django.core import checks


@checks.register(checks.Tags.compatibility)
def replay_clock_is_for_scratch_portals(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """`ALLOT_REPLAY_CLOCK` lets any cluster admin move the portal's time for scheduling,
    budgets, runs and reservations: hours of GPU time billed or forgiven, slots started or
    skipped. It is for scratch portals that replay scenarios (DEBUG on, simulated cluster)."""
    if not getattr(settings, "ALLOT_REPLAY_CLOCK", False):
        return []
    errors = []
    if not settings.DEBUG:
        errors.append(checks.Error(
            "ALLOT_REPLAY_CLOCK is on while DEBUG is off",
            hint="the replay clock lets a cluster admin move the time budgets, runs and "
            "reservations are counted by; it is for scratch portals only: unset it, or set DEBUG=1",
            id="allot.E101",
        ))  # fmt: skip
    if settings.ALLOT_AGENT != "simulated":
        errors.append(checks.Error(
            f"ALLOT_REPLAY_CLOCK is on with ALLOT_AGENT={settings.ALLOT_AGENT}",
            hint="a real cluster's pods run on the wall clock; the replay clock needs the "
            "simulated agent",
            id="allot.E102",
        ))  # fmt: skip
    return errors
