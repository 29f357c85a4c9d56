"""Tables on a terminal and in a pipe.

On a terminal, rich draws the table to the window's width. Piped to another program (`allot
list | grep Running`), rich would cut values to 80 columns with an ellipsis and wrap the header,
so the table is printed as `kubectl get` prints it instead: every value in full, columns aligned
by padding to the widest value, a line per row.
"""

from __future__ import annotations

import sys
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from rich.console import Console
from rich.table import Table

GAP = "   "
CENT = Decimal("0.01")


def _cents(value) -> Decimal | None:
    try:
        return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_UP)  # str: 0.625 stays
    except (InvalidOperation, ValueError):
        return None


def gpus(value) -> str:
    """GPUs as every page spells them (portal/core/formats.py, issue 34 item 11; the command
    line imports nothing of the portal, tests/test_one_spelling_everywhere.py holds them equal):
    two decimals rounded half up, no trailing zeros: 0.625 -> "0.63", 0.5 -> "0.5", 16 -> "16"."""
    number = None if value is None else _cents(value)
    if number is None:
        return "-"
    text = f"{number:f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def gpu_hours(value) -> str:
    """GPU-hours with two decimals, half up: 0 -> "0.00", 0.0166 -> "0.02" (as the pages)."""
    number = None if value is None else _cents(value)
    return "-" if number is None else f"{number:f}"


def show(table: Table, console: Console, stream=None) -> None:
    """Print `table`: drawn by rich on a terminal, plain aligned columns otherwise."""
    stream = stream or sys.stdout
    if stream.isatty():
        console.print(fitted(table, console.width))
        return
    stream.write(plain(table))


def fitted(table: Table, width: int) -> Table:
    """The table for a window `width` columns wide (80, say): a header is never broken, and
    the widest values wrap onto more lines instead of being cut with an ellipsis. Each column
    gets its whole value when all fit, else the widest are narrowed in turn, never below their
    header."""
    columns = table.columns
    headers = [len(str(column.header)) for column in columns]
    widths = [max([size, *(len(str(cell)) for cell in column.cells)])
              for size, column in zip(headers, columns, strict=True)]  # fmt: skip
    budget = width - 2 * max(len(columns) - 1, 0)  # a gap of two between columns
    while sum(widths) > budget:
        widest = max(range(len(widths)), key=lambda i: widths[i] - headers[i])
        if widths[widest] <= headers[widest]:
            break  # even the headers alone do not fit: the terminal cuts the line
        widths[widest] -= 1
    for column, size in zip(columns, widths, strict=True):
        column.width, column.overflow, column.no_wrap = size, "fold", False
    return table


def plain(table: Table) -> str:
    """The table as aligned text lines, nothing cut; the last column is not padded."""
    columns = [[str(column.header), *(str(cell) for cell in column.cells)]
               for column in table.columns]  # fmt: skip
    if not columns:
        return ""
    widths = [max(len(value) for value in column) for column in columns]
    lines = []
    for row in zip(*columns, strict=True):
        cells = [value.ljust(width) for value, width in zip(row[:-1], widths, strict=False)]
        lines.append(GAP.join([*cells, row[-1]]).rstrip())
    return "\n".join(lines) + "\n"
