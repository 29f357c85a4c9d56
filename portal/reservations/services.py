"""Reservations' writes (book, change, cancel) and their occurrences as the scheduler's input.

The REST API and the pages write through these verbs; who may book is asked of `portal.access`
by the caller, the fields are checked by the API's serializer, and the refusal of a booking
over capacity (R22.1) is the core's own (`scheduler.reservations.refusal`), made here under a
lock so that two bookings of the last GPUs cannot both pass.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from portal.audit import services as audit
from portal.cluster.models import Node as NodeRow
from portal.jobs.models import JobEvent
from portal.reservations.models import Reservation, ReservationNotice
from scheduler import Node
from scheduler import Reservation as Occurrence
from scheduler.reservations import Refusal, refusal, weekly

FIELDS = ("name", "project", "gpus", "cpu_millis", "memory_bytes", "pool", "whole_nodes",
          "start", "end", "weekly", "repeat_until")  # fmt: skip
HORIZON = timedelta(days=8)
"""How far ahead a cycle sees occurrences: a week and a day, so a weekly slot is always in view
once the one before has ended (R22.2 holds work back from the moment a slot is in view)."""
NOTICE_BEFORE = timedelta(hours=1)
"""How long before a slot starts its project is told (email, toast, webhooks)."""
LOCK = 0x414C4C52  # "ALLR": the advisory lock that serialises bookings


class Refused(Exception):
    """A booking the cluster cannot hold (R22.1): `field` and `reason` for a 4xx."""

    def __init__(self, found: Refusal):
        super().__init__(found.reason)
        self.field = found.field
        self.reason = found.reason


def occurrences(
    booking: Reservation, since: datetime, before: datetime
) -> list[tuple[datetime, datetime]]:
    """The (start, end) of the booking's occurrences that overlap [since, before) (R22.1)."""
    if not booking.weekly:
        overlaps = booking.start < before and booking.end > since
        return [(booking.start, booking.end)] if overlaps else []
    zone = timezone.get_current_timezone()  # a weekly slot keeps the portal's wall clock
    start, end = booking.start.astimezone(zone), booking.end.astimezone(zone)
    return weekly(start, end, booking.repeat_until, since, before)


def core_reservations(
    bookings: Iterable[Reservation], since: datetime, before: datetime
) -> tuple[Occurrence, ...]:
    """Every occurrence of `bookings` overlapping [since, before) as the scheduler's input, on
    the portal's clock (epoch seconds, as `Snapshot.now`): what the cycle passes to the core,
    and what a preview of a change may pass to it as well."""
    out = []
    for booking in bookings:
        for start, end in occurrences(booking, since, before):
            out.append(
                Occurrence(
                    name=booking.name if not booking.weekly else f"{booking.name} {start:%Y-%m-%d}",
                    project=booking.project.name,
                    gpus=booking.gpus,
                    start=start.timestamp(),
                    end=end.timestamp(),
                    pool=booking.pool or None,
                    whole_nodes=booking.whole_nodes,
                    cpu_millis=booking.cpu_millis,
                    memory_bytes=booking.memory_bytes,
                )
            )
    return tuple(out)


def in_view(now: datetime) -> tuple[Occurrence, ...]:
    """The occurrences a cycle at `now` passes to the core: those not over within `HORIZON`."""
    bookings = Reservation.objects.select_related("project")
    return core_reservations(bookings, now, now + HORIZON)


def _nodes() -> tuple[Node, ...]:
    """The nodes as the core's refusal counts them: pool, size, ready, failed devices."""
    return tuple(
        Node(name=name, gpus=gpus, pool=pool, ready=ready, failed_devices=tuple(failed or ()))
        for name, gpus, pool, ready, failed in NodeRow.objects.values_list(
            "name", "gpus", "pool", "ready", "failed_devices"
        )
    )


def check_capacity(candidate: Reservation, label=lambda booking: booking.name) -> None:
    """Raise `Refused` when the candidate (saved or not), beside every other booking, asks more
    of its pool than it has at some moment of any of its occurrences (R22.1). `label` names
    another booking in the reason (a user who may not see it reads "another booking")."""
    others = Reservation.objects.select_related("project").exclude(pk=candidate.pk)
    others = others.order_by("id")  # a refusal names the others in the order they were booked
    first = candidate.start
    last = candidate.repeat_until if candidate.weekly else candidate.end
    last = last or first + timedelta(weeks=52)  # a weekly booking for ever: its first year
    names = {}
    booked = []
    for other in others:
        for occurrence in core_reservations([other], first, last):
            names[occurrence.name] = label(other)
            booked.append(occurrence)
    nodes = _nodes()
    zone = timezone.get_current_timezone()
    for occurrence in core_reservations([candidate], first, last):
        found = refusal(
            occurrence, booked, nodes,
            moment=lambda t: datetime.fromtimestamp(t, zone).strftime("%Y-%m-%d %H:%M %Z"),
        )  # fmt: skip
        if found is not None:
            for core_name, shown in names.items():
                found = Refusal(found.field, found.reason.replace(f"'{core_name}'", f"'{shown}'"))
            raise Refused(found)


def _locked() -> None:
    """Serialise bookings for the rest of the transaction (PostgreSQL's advisory lock; the
    embedded SQLite portal writes one at a time anyway)."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK])


def book(created_by=None, label=lambda booking: booking.name, **fields) -> Reservation:
    """A new booking; `fields` were validated by the serializer, who may book by
    `portal.access.booking_refusal`; refused over capacity with `Refused` (R22.1)."""
    with transaction.atomic():
        _locked()
        booking = Reservation(created_by=created_by, **fields)
        check_capacity(booking, label)
        booking.save()
        after = audit.snapshot(booking, FIELDS)
        audit.record(
            "reservation.created", booking, changes={k: [None, v] for k, v in after.items()}
        )
    return booking


def change(booking: Reservation, label=lambda booking: booking.name, **fields) -> Reservation:
    """Change a booking's fields (those given), checked again over capacity (R22.1)."""
    with transaction.atomic():
        _locked()
        before = audit.snapshot(booking, fields)
        for key, value in fields.items():
            setattr(booking, key, value)
        check_capacity(booking, label)
        booking.save()
        audit.record_changes(booking, before, {"reservation.changed": None})
    return booking


def cancel(booking: Reservation) -> None:
    """Remove a booking; from the next cycle on it holds nothing back and takes nothing."""
    audit.record("reservation.deleted", booking, changes={"name": [booking.name, None]})
    booking.delete()


def announce(now: datetime) -> list[int]:
    """Tell each project of its slots starting within `NOTICE_BEFORE`, once per occurrence: a
    project event of kind ``reservation`` (its members and webhooks hear of it through
    `portal.notify.dispatch`); returns the events' ids for `dispatch.after_commit`."""
    events = []
    for booking in Reservation.objects.select_related("project"):
        for start, end in occurrences(booking, now, now + NOTICE_BEFORE):
            if start > now:
                event = _notice(booking, start, end, now)
                if event is not None:
                    events.append(event)
    return events


def _notice(booking: Reservation, start: datetime, end: datetime, now: datetime) -> int | None:
    """One notice and its event (savepoint: a concurrent cycle that got there first wins)."""
    if ReservationNotice.objects.filter(reservation=booking, occurrence_start=start).exists():
        return None
    zone = timezone.get_current_timezone()
    text = (
        f"{booking.project.name}'s reservation {booking.name!r} of {booking.gpus} GPUs starts at "
        f"{start.astimezone(zone):%Y-%m-%d %H:%M %Z} and ends at "
        f"{end.astimezone(zone):%Y-%m-%d %H:%M %Z}; its jobs go there first and take back "
        "what holds the GPUs (R22.3)"
    )
    try:
        with transaction.atomic():
            event = JobEvent.objects.create(time=now, project=booking.project, job_name="",
                                            kind="reservation", message=text)  # fmt: skip
            ReservationNotice.objects.create(reservation=booking, occurrence_start=start,
                                             event=event, sent_at=now)  # fmt: skip
    except IntegrityError:
        return None
    return event.id
