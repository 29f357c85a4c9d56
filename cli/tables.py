"""Tables on a terminal and in a pipe.

On a terminal, rich draws the table to the window's width. Piped to another program (`allot
list | grep Running`), rich would cut values to 80 columns with an ellipsis and wrap the header,
so the table is printed as `kubectl get` prints it instead: every value in full, columns aligned
by padding to the widest value, a line per row.
"""

from __future__ import annotations

import sys

from rich.console import Console
from rich.table import Table

GAP = "   "


def show(table: Table, console: Console, stream=None) -> None:
    """Print `table`: drawn by rich on a terminal, plain aligned columns otherwise."""
    stream = stream or sys.stdout
    if stream.isatty():
        console.print(table)
        return
    stream.write(plain(table))


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
