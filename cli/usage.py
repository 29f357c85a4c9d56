"""`allot usage`: GPU-hours per project, department or user, as Slurm's `sreport` gives them
(issue 23), with core-hours and memory GiB-hours when runs held CPU or memory (issue 26). A client
of GET /api/v1/accounting/: the same figures as the page and the CSV."""

from __future__ import annotations

from rich.table import Table

from .tables import gpu_hours

COLUMNS = ("ALLOCATED GPU-h", "USED GPU-h", "UTIL", "OVER-QUOTA GPU-h", "RUNS")
RESOURCE_COLUMNS = ("CORE-h", "MEMORY GiB-h")


def hours(value: float | None) -> str:
    """GPU-hours to two decimals, half up, as the pages (`tables.gpu_hours`)."""
    return gpu_hours(value)


def used(figures: dict) -> str:
    """Used GPU-hours, or 'not measured'; ' sim' when the utilization is synthetic, ' partly'
    when some hours had none measured."""
    if figures["used_gpu_hours"] is None:
        return "not measured"
    mark = {"simulated": " sim", "partly measured": " partly"}.get(figures["used_basis"], "")
    return hours(figures["used_gpu_hours"]) + mark


def cells(figures: dict, resources: bool) -> list[str]:
    util = figures["utilization"]
    extra = ([hours(figures["allocated_core_hours"]),
              hours(figures["allocated_memory_gib_hours"])] if resources else [])  # fmt: skip
    return [hours(figures["allocated_gpu_hours"]), used(figures),
            "-" if util is None else f"{round(util * 100)}%",
            hours(figures["over_quota_gpu_hours"]), str(figures["runs"]), *extra]  # fmt: skip


def held_resources(report: dict) -> bool:
    """True when any run in the report held CPU or memory (clusters that track them)."""
    total = report["total"]
    return bool(total.get("allocated_core_hours") or total.get("allocated_memory_gib_hours"))


def usage_table(report: dict, per_period: bool) -> Table:
    """One row per group (its totals over the range), or per period and group; a TOTAL row."""
    group = report["group_by"]
    resources = held_resources(report)
    heads = (["PERIOD"] if per_period else []) + [group.upper(), *COLUMNS]
    heads += list(RESOURCE_COLUMNS) if resources else []
    table = Table(*heads, box=None, pad_edge=False)
    rows = report["rows"] if per_period else report["totals"]
    for row in rows:
        first = [row["period"]] if per_period else []
        table.add_row(*first, row.get(group) or "-", *cells(row, resources))
    if rows:
        table.add_row(*([""] if per_period else []), "TOTAL", *cells(report["total"], resources))
    return table


def heading(report: dict) -> str:
    """What the report covers, in a line."""
    return (f"GPU-hours {report['since'][:16]} to {report['until'][:16]} ({report['timezone']}), "
            f"by {report['group_by']}; running runs counted to {report['now'][:19]}")  # fmt: skip


BUDGET_COLUMNS = ("BUDGET", "SCOPE", "WINDOW", "KIND", "USED GPU-h", "OF GPU-h", "LEFT GPU-h",
                  "USED", "RUNS OUT")  # fmt: skip


def scope(budget: dict) -> str:
    """'team-a', 'dept physics' or 'ada@team-a'."""
    if budget["department"]:
        return f"dept {budget['department']}"
    return f"{budget['user']}@{budget['project']}" if budget["user"] else budget["project"]


def window(budget: dict) -> str:
    if budget["window"] == "term":
        return f"{budget['term_start']}..{budget['term_end']}"
    return f"{budget['rolling_days']} days" if budget["window"] == "rolling" else "month"


def budgets_table(budgets: list[dict]) -> Table:
    """One row per budget: what its window used, of how much, what is left and when it runs out
    at the current burn rate (GET /api/v1/budgets/, issue 36)."""
    table = Table(*BUDGET_COLUMNS, box=None, pad_edge=False)
    for budget in budgets:
        use = budget["usage"]
        kind = budget["kind"] + (f" ({budget['over']})" if budget["kind"] == "hard" else "")
        out = use["runs_out_at"]
        table.add_row(
            budget["name"], scope(budget), window(budget), kind, hours(use["used_gpu_hours"]),
            hours(budget["gpu_hours"]), hours(use["gpu_hours_left"]), f"{use['percent']:.0f}%",
            "spent" if use["spent"] else (out[:16] if out else "-"),
        )  # fmt: skip
    return table
