"""The reservations calendar (issue 37, R22): one week, hour by hour, with the GPUs booked in
each hour against the cluster's, and the bookings the user may see named in their slots.

Another team's booking counts in the load (the cluster's GPUs are shared by everyone) but is
not named: its project is as private as its jobs (`portal.access.reservation_filter`). Bookings
are made through `/api/v1/reservations/` or `allot reservations book` (one write path,
`portal.reservations.services`).
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone

from portal import access
from portal.cluster.models import Node
from portal.reservations.models import Reservation
from portal.reservations.services import occurrences

HOURS = range(24)


def week_of(raw: str | None, today: date) -> date:
    """The Monday of the week asked for (`?week=2026-12-01`, any day of it), else this week's; a
    malformed value is this week (the page never fails on a bad link)."""
    try:
        day = date.fromisoformat(raw) if raw else today
    except ValueError:
        day = today
    return day - timedelta(days=day.weekday())


def slots(monday: date, zone) -> list[tuple[datetime, datetime]]:
    """The week's (start, end) hours, hour by hour, day by day, on the portal's wall clock."""
    out = []
    for offset in range(7):
        day = monday + timedelta(days=offset)
        for hour in HOURS:
            start = datetime.combine(day, time(hour), tzinfo=zone)
            out.append((start, start + timedelta(hours=1)))
    return out


def calendar(user, monday: date) -> dict:
    """Each hour's booked GPUs, the names of the visible bookings in it, and the week's list."""
    zone = timezone.get_current_timezone()
    first = datetime.combine(monday, time.min, tzinfo=zone)
    last = first + timedelta(days=7)
    mine = set(
        Reservation.objects.filter(access.reservation_filter(user)).values_list("id", flat=True)
    )
    found = []  # (booking, start, end, visible)
    for booking in Reservation.objects.select_related("project"):
        for start, end in occurrences(booking, first, last):
            found.append((booking, start, end, booking.id in mine))
    capacity = sum(Node.objects.filter(ready=True).values_list("gpus", flat=True))
    cells = {}
    for start, end in slots(monday, zone):
        here = [(b, v) for b, s, e, v in found if s < end and e > start]
        booked = sum(b.gpus for b, _ in here)
        names = [f"{b.name} ({b.project.name}, {b.gpus})" for b, v in here if v]
        others = sum(b.gpus for b, v in here if not v)
        cells[(start.weekday(), start.hour)] = {
            "booked": booked, "names": names, "others": others,
            "level": min(4, -(-4 * booked // capacity)) if capacity else 4,
        }  # fmt: skip
    days = [monday + timedelta(days=i) for i in range(7)]
    rows = [(hour, [cells[(d.weekday(), hour)] for d in days]) for hour in HOURS]
    listed = sorted(((b, s, e) for b, s, e, v in found if v), key=lambda item: item[1])
    return {"days": days, "rows": rows, "listed": listed, "capacity": capacity}


@login_required
def reservations(request: HttpRequest) -> HttpResponse:
    """The week's calendar of reservations (everyone signed in)."""
    today = timezone.localdate()
    monday = week_of(request.GET.get("week"), today)
    context = calendar(request.user, monday)
    return render(request, "web/reservations.html", {
        "page": "reservations", "monday": monday, **context,
        "previous": monday - timedelta(days=7), "next": monday + timedelta(days=7),
        "today": today,
    })  # fmt: skip
