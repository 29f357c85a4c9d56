"""Moments read from a query string, made safe to hand to the database.

RFC 3339 allows UTC offsets up to ±23:59; PostgreSQL refuses any past ±15:59 (a DataError, a
500 at the first query). A moment is therefore converted to UTC before it is used, and one that
UTC cannot hold (the first hours of year 1 east of Greenwich, the last of 9999 west of it) is
held at the first or last moment there is, which every stored time is after or before alike.
"""

from __future__ import annotations

from datetime import UTC, datetime


def in_utc(moment: datetime) -> datetime:
    """`moment` (aware) in UTC, held within the years a datetime can hold."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        edge = datetime.min if moment.year == datetime.min.year else datetime.max
        return edge.replace(tzinfo=UTC)
