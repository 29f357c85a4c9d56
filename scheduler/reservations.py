"""Reservations in the core (Allot's R22 rules, docs/reservations.md): booking GPUs ahead.

A booking reaches the core as plain data, one :class:`~scheduler.model.Reservation` per
occurrence (`weekly` expands a weekly one), on the snapshot's clock. What it does in the cycle
is in scheduler/actions/booking.py; this module holds what the producer needs before a cycle:

- R22.1: the reserved shape (`stand_in`: the job the reserved capacity must hold at the slot's
  start) and the refusal of a booking that, with the bookings it overlaps, asks more of its
  pool than the pool has (`refusal`), naming the field and the reason.
- The expansion of a weekly booking into occurrences (`weekly`), kept on the wall clock of its
  time zone ("Tuesdays 14:00" stays 14:00 across a change of summer time).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .model import Job, Node, Reservation

STAND_IN = "@reservation:"
"""Prefix of the stand-in job's name; the leading @ keeps it apart from any job's name."""
WEEK = timedelta(days=7)


def check(reservation: Reservation) -> None:
    """ValueError naming the field when an occurrence cannot be one (R22.1): at least one
    whole GPU, an end after its start, CPU and memory not negative."""
    where = f"reservation {reservation.name!r}"
    if not isinstance(reservation.gpus, int) or reservation.gpus < 1:
        raise ValueError(f"{where}: gpus must be a whole number of at least 1 (R22.1)")
    if not reservation.end > reservation.start:
        raise ValueError(f"{where}: end must be after start (R22.1)")
    for name in ("cpu_millis", "memory_bytes"):
        value = getattr(reservation, name)
        if value is not None and value < 0:
            raise ValueError(f"{where}: {name} must not be negative (R22.1)")


def check_bookings(bookings: Iterable[Reservation]) -> tuple[Reservation, ...]:
    """The snapshot's reservations, each checked (ValueError naming the field, R22.1)."""
    bookings = tuple(bookings)
    for reservation in bookings:
        check(reservation)
    return bookings


def pool_nodes(reservation: Reservation, nodes: Iterable[Node]) -> list[Node]:
    """The ready nodes the reservation may take: its pool's, or every pool's when it names none."""
    return [
        n for n in nodes if n.ready and (reservation.pool is None or n.pool == reservation.pool)
    ]


def node_size(reservation: Reservation, nodes: Iterable[Node]) -> int:
    """GPUs of one whole node of the reservation's pool (the largest, if sizes differ)."""
    return max((n.gpus for n in pool_nodes(reservation, nodes)), default=0)


def stand_in(reservation: Reservation, per_node: int = 1) -> Job:
    """The job the reserved capacity must hold at the slot's start (R22.1): `gpus` pods of one
    GPU, or with `whole_nodes` pods of `per_node` GPUs (one whole node each), each pod with its
    share of the booked CPU and memory, rounded up. Never submitted; only counted."""
    size = per_node if reservation.whole_nodes and per_node > 0 else 1
    pods = math.ceil(reservation.gpus / size)
    return Job(
        project=reservation.project,
        name=STAND_IN + reservation.name,
        gpus=float(size),
        pods=pods,
        cpu_millis=-(-(reservation.cpu_millis or 0) // pods),
        memory_bytes=-(-(reservation.memory_bytes or 0) // pods),
    )


@dataclass(frozen=True)
class Refusal:
    """Why a booking is refused: the `field` at fault and the reason in plain words (R22.1)."""

    field: str
    reason: str


def refusal(
    new: Reservation,
    booked: Iterable[Reservation],
    nodes: Iterable[Node],
    moment=lambda t: f"t={t:g}",
) -> Refusal | None:
    """Why `new` cannot be booked beside the `booked` occurrences, or None (R22.1).

    Its pool must exist and hold its GPUs (whole nodes of one size when it asks for whole
    nodes); then, at every moment of its slot, the GPUs (and whole nodes) of the bookings
    active on the same capacity may not exceed it: a booking on a pool shares that pool with
    the bookings on it and with those naming no pool; one naming no pool shares the cluster
    with every booking. `moment` turns a clock value into words (the portal gives dates)."""
    nodes = list(nodes)
    where = nodes if new.pool is None else [n for n in nodes if n.pool == new.pool]
    ready = [n for n in where if n.ready]
    if new.pool is not None and not where:
        return Refusal("pool", f"no node is in pool {new.pool!r} (R22.1)")
    capacity = sum(n.healthy_gpus for n in ready)
    if new.whole_nodes:
        sizes = {n.gpus for n in ready}
        if len(sizes) > 1:
            return Refusal(
                "whole_nodes",
                f"the nodes of {_scope(new)} differ in size ({', '.join(map(str, sorted(sizes)))}"
                " GPUs): whole nodes need one size (R22.1)",
            )
        if sizes and new.gpus % next(iter(sizes)):
            return Refusal(
                "gpus",
                f"{new.gpus} GPUs are not whole nodes of {next(iter(sizes))} GPUs (R22.1)",
            )
    if new.gpus > capacity:
        return Refusal("gpus", f"{_scope(new)} has {capacity} GPUs, fewer than {new.gpus} (R22.1)")
    sharing = [
        r for r in booked
        if r.name != new.name and r.start < new.end and new.start < r.end and _shares(new, r)
    ]  # fmt: skip
    for at in sorted({new.start, *(r.start for r in sharing if r.start > new.start)}):
        active = [r for r in sharing if r.start <= at < r.end]
        total = new.gpus + sum(r.gpus for r in active)
        if total > capacity:
            names = ", ".join(repr(r.name) for r in active)
            return Refusal(
                "gpus",
                f"at {moment(at)} {_scope(new)} would have {total} of its {capacity} GPUs "
                f"booked, with {names} (R22.1)",
            )
    return None


def _shares(a: Reservation, b: Reservation) -> bool:
    return a.pool is None or b.pool is None or a.pool == b.pool


def _scope(reservation: Reservation) -> str:
    return "the cluster" if reservation.pool is None else f"pool {reservation.pool!r}"


def weekly(
    start: datetime, end: datetime, until: datetime | None, since: datetime, before: datetime
) -> list[tuple[datetime, datetime]]:
    """The occurrences (start, end) of a booking repeated weekly from `start`-`end` up to
    `until` (an occurrence starting at or after it is not one; None: for ever) that overlap
    [`since`, `before`). Times are aware; a week later is the same wall-clock time in the
    start's zone, so a slot keeps its hour across a change of summer time (R22.1)."""
    if end <= start:
        raise ValueError("end must be after start")
    length = end - start
    first = 0
    if since > end:  # skip whole weeks before the window without walking them
        first = max(0, (since - end) // WEEK)
    out = []
    k = first
    while True:
        begin = start + k * WEEK  # aware + timedelta keeps the wall clock (PEP 495)
        if begin >= before or (until is not None and begin >= until):
            return out
        if begin + length > since:
            out.append((begin, begin + length))
        k += 1
