"""`allot usage`: GPU-hours per project, department or user, as Slurm's `sreport` gives them
(issue 23). A client of GET /api/v1/accounting/: the same figures as the page and the CSV."""

from __future__ import annotations

from rich.table import Table

COLUMNS = ("ALLOCATED GPU-h", "USED GPU-h", "UTIL", "OVER-QUOTA GPU-h", "RUNS")


def hours(value: float | None) -> str:
    """GPU-hours to two decimals."""
    return "-" if value is None else f"{value:.2f}"


def used(figures: dict) -> str:
    """Used GPU-hours, or 'not measured'; ' sim' when the utilization is synthetic, ' partly'
    when some hours had none measured."""
    if figures["used_gpu_hours"] is None:
        return "not measured"
    mark = {"simulated": " sim", "partly measured": " partly"}.get(figures["used_basis"], "")
    return hours(figures["used_gpu_hours"]) + mark


def cells(figures: dict) -> list[str]:
    util = figures["utilization"]
    return [hours(figures["allocated_gpu_hours"]), used(figures),
            "-" if util is None else f"{round(util * 100)}%",
            hours(figures["over_quota_gpu_hours"]), str(figures["runs"])]  # fmt: skip


def usage_table(report: dict, per_period: bool) -> Table:
    """One row per group (its totals over the range), or per period and group; a TOTAL row."""
    group = report["group_by"]
    heads = (["PERIOD"] if per_period else []) + [group.upper(), *COLUMNS]
    table = Table(*heads, box=None, pad_edge=False)
    rows = report["rows"] if per_period else report["totals"]
    for row in rows:
        first = [row["period"]] if per_period else []
        table.add_row(*first, row.get(group) or "-", *cells(row))
    if rows:
        table.add_row(*([""] if per_period else []), "TOTAL", *cells(report["total"]))
    return table


def heading(report: dict) -> str:
    """What the report covers, in a line."""
    return (f"GPU-hours {report['since'][:16]} to {report['until'][:16]} ({report['timezone']}), "
            f"by {report['group_by']}; running runs counted to {report['now'][:19]}")  # fmt: skip
