"""The reservations calendar (issue 37, R22): one week, hour by hour, with the GPUs booked in
each hour against the cluster's, and the bookings the user may see named in their slots.

Another team's booking counts in the load (the cluster's GPUs are shared by everyone) but is
not named: its project is as private as its jobs (`portal.access.reservation_filter`).

Cluster admins, and a project's admins within the policy of `portal.access.booking_refusal`,
book on the page's form. The form is read by the API's serializer and written through the API's
`write` (one write path, `portal.reservations.services`), so a refusal reads the same here, in
`allot reservations book` and in the JSON, each message beside the box it is about. Its Preview
runs the what-if (`portal.scheduling.whatif`) with the booking added, as the project and node
forms' Preview buttons do for a quota or a drain.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from portal import access
from portal.api.serializers.reservations import ReservationSerializer
from portal.api.serializers.whatif import WhatIfSerializer
from portal.api.views.reservations import check, fits, write
from portal.cluster.models import Node
from portal.core import clock
from portal.reservations.models import Reservation
from portal.reservations.services import HORIZON, core_reservations, occurrences
from portal.scheduling import whatif
from portal.web.forms import (
    CHECK,
    CHOICE,
    INTEGER,
    QUANTITY,
    TEXT,
    field_errors,
    form_input,
    in_labels,
)
from scheduler.whatif import AddReservation

HOURS = range(24)
FORM = {
    "name": TEXT, "project": CHOICE, "gpus": INTEGER, "cpu": QUANTITY, "memory": QUANTITY,
    "pool": TEXT, "whole_nodes": CHECK, "start": TEXT, "end": TEXT, "weekly": CHECK,
    "repeat_until": TEXT,
}  # fmt: skip
WORDS = {"start": "the start", "repeat_until": "the repeat's end", "whole_nodes": "whole nodes"}
"""The API's field names in a message as the form's labels say them ("must be after start")."""
PREVIEW_HOURS = 6


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


def _read(request: HttpRequest) -> tuple[ReservationSerializer | None, dict]:
    """The form through the API's serializer and who-may-book check: (serializer, {}) or
    (None, errors by the form's field names, in its words)."""
    data, errors = form_input(request.POST, FORM)
    if errors:
        return None, errors
    serializer = ReservationSerializer(data=data, context={"request": request})
    if not serializer.is_valid():
        return None, _worded(field_errors(serializer.errors))
    try:
        check(request.user, serializer, None)
    except APIException as exc:  # the project's 403 reads beside the project's box
        return None, _worded(_on_project(field_errors(exc)))
    return serializer, {}


def _on_project(errors: dict) -> dict:
    return {"project" if key == "form" else key: value for key, value in errors.items()}


def _worded(errors: dict) -> dict:
    """`errors` with memory's MiB twin (`memory_mib`) under the memory box and the API's field
    names in the messages said as the form's labels ("must be after the start")."""
    out: dict[str, list[str]] = {}
    for key, reasons in errors.items():
        out.setdefault("memory" if key == "memory_mib" else key, []).extend(reasons)
    return in_labels(out, WORDS)


def _book(request: HttpRequest) -> tuple[Reservation | None, dict]:
    serializer, errors = _read(request)
    if serializer is None:
        return None, errors
    try:
        return write(request.user, serializer, None), {}
    except APIException as exc:  # over capacity (R22.1), or a name taken meanwhile
        return None, _worded(_on_project(field_errors(exc)))


@login_required
def reservations(request: HttpRequest) -> HttpResponse:
    """The week's calendar of reservations (everyone signed in) and, for those who may book,
    the booking form: a booking saved shows its week; a refused one the form again, each
    reason under its box, status 400, nothing saved."""
    today = timezone.localdate()
    bookable = access.bookable_projects(request.user).order_by("name")
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        if not bookable.exists():
            raise PermissionDenied
        booking, errors = _book(request)
        if booking is not None:
            messages.success(request, f"Reservation {booking.name} of {booking.gpus} GPUs saved.")
            start = timezone.localtime(booking.start).date()
            return redirect(f"{request.path}?week={start:%Y-%m-%d}")
        values, status = request.POST, 400
    monday = week_of(request.GET.get("week"), today)
    if request.method == "POST" and values.get("start"):
        monday = week_of(values["start"][:10], today)  # the week of the slot asked for
    context = calendar(request.user, monday)
    pools = sorted(set(Node.objects.values_list("pool", flat=True)) - {""})
    return render(request, "web/reservations.html", {
        "page": "reservations", "monday": monday, **context,
        "previous": monday - timedelta(days=7), "next": monday + timedelta(days=7),
        "today": today, "bookable": bookable, "pools": pools, "errors": errors,
        "values": values, "may_preview": access.may_preview_changes(request.user),
    }, status=status)  # fmt: skip


@login_required
@require_POST
def reservation_preview(request: HttpRequest) -> JsonResponse:
    """The what-if of the booking on the form (cluster admins, as every preview: it shows every
    project's queue): {"errors": ...} by the form's fields with status 400 when the booking
    would be refused, else the what-if's answer as `POST /api/v1/what-if/` gives it. Saves
    nothing."""
    if not access.may_preview_changes(request.user):
        raise PermissionDenied
    serializer, errors = _read(request)
    if serializer is None:
        return JsonResponse({"errors": errors}, status=400)
    candidate = Reservation(created_by=request.user, **serializer.validated_data)
    try:
        fits(request.user, candidate)
    except APIException as exc:
        return JsonResponse({"errors": _worded(field_errors(exc))}, status=400)
    now = clock.now()  # the slots a cycle would see (a later one holds back long work now)
    changes = [AddReservation(r) for r in core_reservations([candidate], now, now + HORIZON)]
    try:
        result = whatif.preview(changes, PREVIEW_HOURS, now)
    except ValueError as exc:  # a booking of that name is in view already
        return JsonResponse({"errors": {"name": [str(exc)]}}, status=400)
    return JsonResponse(WhatIfSerializer(whatif.answer(result)).data)
