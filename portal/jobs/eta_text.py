"""A pending job's expected start in words, from what the ETA refresh wrote (`Job.eta_kind`).

One text for the job page, the API (`expected_start`) and so the CLI: never a time in the past
(a start that is due says so), always what it rests on, and "cannot start" when that is the
truth instead of "unknown" (issue 24, item 2).
"""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

DUE_S = 60  # a start within a minute, or already passed, is due: the next cycles start it
NEXT_CYCLE = ("at the next scheduling cycle if there is room for it, in a few seconds; else that "
              "cycle says why it waits")  # fmt: skip


def in_words(seconds: float) -> str:
    """'4 min', '1 h 05 min', '2 d 3 h' for a positive span."""
    minutes = max(1, round(seconds / 60))
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min"


def clock(at: datetime, now: datetime) -> str:
    """'12:40 UTC' today, '27 Nov 12:40 UTC' another day, in the portal's time zone."""
    local, today = timezone.localtime(at), timezone.localtime(now)
    return f"{local:%H:%M %Z}" if local.date() == today.date() else f"{local:%d %b %H:%M %Z}"


def expected_start(kind: str, eta: datetime | None, note: str, now: datetime | None = None,
                   considered: bool = True) -> str:  # fmt: skip
    """The expected start of a pending job in words (see the module's docstring); a job no
    cycle has considered yet (`considered` False: just submitted) starts in the next one if
    there is room, which is what it is told (issue 34 item 3: it was told it waited behind 30
    days of run time while its first cycle was starting it)."""
    now = now or timezone.now()
    if not considered and kind in ("", "at", "not_before"):
        return NEXT_CYCLE
    if kind == "never":
        return note
    if kind == "at" and eta is not None:
        left = (eta - now).total_seconds()
        if left <= DUE_S:
            return "any moment now: the next cycles should start it"
        return (f"{clock(eta, now)} (in {in_words(left)}), from the predicted run times of the "
                "jobs it waits for")  # fmt: skip
    if kind == "not_before" and eta is not None:
        left = (eta - now).total_seconds()
        outlived = "it waits on running jobs that have run longer than predicted"
        if left <= DUE_S:
            return f"any moment, or later: {outlived}, and they may end at any time"
        return (f"not before {clock(eta, now)} (in {in_words(left)} at the earliest): {outlived}; "
                "this is if they ended now")  # fmt: skip
    return ("not known yet: it waits behind more than 30 days of predicted run time, or the "
            "next ETA refresh has not run")  # fmt: skip


def shown_eta(kind: str, eta: datetime | None, now: datetime | None = None) -> datetime | None:
    """The ETA as the API gives it: never earlier than now (a due start is due now)."""
    if eta is None or kind == "never":
        return None
    now = now or timezone.now()
    return max(eta, now)
