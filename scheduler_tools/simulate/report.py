"""Printing and writing a simulation's results: text tables, CSV files, a self-contained HTML.

The one module of the simulator that imports plotly (the tools may, the core may not: see
pyproject's import-linter contracts), and it does so lazily, inside :func:`write_html`, so the
simulator runs without it (``--no-html``). The HTML inlines plotly.js from the installed
package: no CDN, it opens offline.
"""

from __future__ import annotations

import csv
import gzip
import html
import math
from collections.abc import Sequence
from pathlib import Path

from .metrics import RunResult

SUMMARY_COLUMNS = [
    "policy",
    "setting",
    "capacity_gpus",
    "jobs",
    "finished",
    "unfinished",
    "avg_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "avg_queue_s",
    "p50_queue_s",
    "p95_queue_s",
    "p99_queue_s",
    "avg_first_wait_s",
    "makespan_s",
    "utilization",
    "utilization_submit_span",
    "goodput",
    "idle_while_pending",
    "utilization_requested",
    "unrequested_while_pending",
    "pending_time_s",
    "evictions",
    "moves",
    "lost_gpu_h",
    "backfilled",
    "min_fairness",
    "min_fairness_raw",
    "predicted_within_2x",
    "cycles",
    "core_s",
    "wall_s",
    "cycle_s",
    "restart",
    "hidden_jobs",
    "note",
]
TEAM_COLUMNS = [
    "policy",
    "team",
    "quota_gpus",
    "jobs",
    "finished",
    "avg_queue_s",
    "avg_jct_s",
    "gpu_h",
    "asking_h",
    "fairness",
    "fairness_raw",
]
JOB_COLUMNS = [
    "policy",
    "job_id",
    "team",
    "gpus",
    "pods",
    "submit_s",
    "duration_s",
    "first_start_s",
    "end_s",
    "jct_s",
    "queued_s",
    "evictions",
    "moves",
    "lost_s",
    "backfilled",
    "predicted_s",
    "basis",
]


def _seconds(value: float) -> str:
    return f"{value:,.0f}"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def summary_table(results: Sequence[RunResult]) -> str:
    """The per-policy summary as fixed-width text (seconds, shares of 1)."""
    header = (
        f"{'policy':<13}{'done':>7}{'left':>6}{'avg JCT':>11}{'p50 JCT':>10}{'p95 JCT':>11}"
        f"{'p99 JCT':>11}{'avg queue':>11}{'p50 q':>8}{'p95 q':>10}{'p99 q':>10}"
        f"{'mkspan d':>9}{'util':>7}{'util*':>7}{'evict':>7}{'moves':>7}{'fair':>7}"
        f"{'fair0':>7}{'cycles':>8}{'wall s':>8}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        s = r.summary
        lines.append(
            f"{r.policy:<13}{s['finished']:>7}{s['unfinished']:>6}"
            f"{_seconds(s['avg_jct_s']):>11}{_seconds(s['p50_jct_s']):>10}"
            f"{_seconds(s['p95_jct_s']):>11}{_seconds(s['p99_jct_s']):>11}"
            f"{_seconds(s['avg_queue_s']):>11}{_seconds(s['p50_queue_s']):>8}"
            f"{_seconds(s['p95_queue_s']):>10}{_seconds(s['p99_queue_s']):>10}"
            f"{s['makespan_s'] / 86400:>9.2f}{s['utilization']:>7.3f}"
            f"{s['utilization_submit_span']:>7.3f}{s['evictions']:>7}{s['moves']:>7}"
            f"{s['min_fairness']:>7.3f}{s['min_fairness_raw']:>7.3f}{s['cycles']:>8}"
            f"{s['wall_s']:>8.1f}"
        )
    lines.append(
        "util* = utilisation over the submission span; fair = min job-granular fairness over "
        "teams; fair0 = min share of asking time holding the full quota (docs/simulation.md)"
    )
    return "\n".join(lines)


def team_table(result: RunResult) -> str:
    """One policy's per-team rows as fixed-width text."""
    header = (
        f"{'team':<10}{'quota':>7}{'jobs':>7}{'avg queue s':>13}{'avg JCT s':>12}"
        f"{'GPU h':>10}{'asking h':>10}{'fair':>7}{'fair0':>7}"
    )
    lines = [f"[{result.policy}] per team", header]
    for row in result.teams:
        lines.append(
            f"{row['team']:<10}{row['quota_gpus']:>7g}{row['jobs']:>7}"
            f"{_seconds(row['avg_queue_s']):>13}{_seconds(row['avg_jct_s']):>12}"
            f"{row['gpu_h']:>10,.0f}{row['asking_h']:>10,.1f}{_share(row['fairness']):>7}"
            f"{_share(row['fairness_raw']):>7}"
        )
    return "\n".join(lines)


def _cell(value) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return value


def write_csvs(out: Path, results: Sequence[RunResult], jobs_csv: str = "plain") -> list[Path]:
    """summary.csv, per_team.csv and jobs.csv (``jobs_csv``: plain, gz or none) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    path = out / "summary.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(SUMMARY_COLUMNS)
        for r in results:
            row = {**r.summary, "policy": r.policy, "setting": r.setting}
            writer.writerow([_cell(row.get(c)) for c in SUMMARY_COLUMNS])
    written.append(path)
    path = out / "per_team.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(TEAM_COLUMNS)
        for r in results:
            for row in r.teams:
                writer.writerow([_cell({**row, "policy": r.policy}.get(c)) for c in TEAM_COLUMNS])
    written.append(path)
    if jobs_csv != "none":
        path = out / ("jobs.csv.gz" if jobs_csv == "gz" else "jobs.csv")
        opener = gzip.open if jobs_csv == "gz" else open
        with opener(path, "wt", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(JOB_COLUMNS)
            for r in results:
                for job in r.jobs:
                    values = {**vars(job), "policy": r.policy, "jct_s": job.jct_s}
                    writer.writerow([_cell(values.get(c)) for c in JOB_COLUMNS])
        written.append(path)
    return written


def resample(series: Sequence[tuple[float, float]], end: float, buckets: int = 1000):
    """A step series (time, value from then on) as time-weighted means over equal buckets up
    to `end`: keeps the chart small for 100k steps without dropping short peaks' area."""
    if not series or end <= series[0][0]:
        return [t for t, _ in series], [v for _, v in series]
    start = series[0][0]
    width = (end - start) / buckets
    times = [start + (i + 0.5) * width for i in range(buckets)]
    sums = [0.0] * buckets
    for i, (t, value) in enumerate(series):
        stop = series[i + 1][0] if i + 1 < len(series) else end
        t, stop = max(t, start), min(stop, end)
        while t < stop:
            bucket = min(int((t - start) / width), buckets - 1)
            if bucket < buckets - 1 and start + (bucket + 1) * width <= t:
                bucket += 1  # t sits on a boundary that float division put one bucket low
            last = bucket == buckets - 1
            edge = stop if last else min(stop, start + (bucket + 1) * width)
            sums[bucket] += value * (edge - t)
            t = edge
    return times, [s / width for s in sums]


def _cdf(values: list[float], points: int = 400) -> tuple[list[float], list[float]]:
    ordered = sorted(values)
    if not ordered:
        return [], []
    step = max(1, len(ordered) // points)
    xs, ys = [], []
    for i in range(0, len(ordered), step):
        xs.append(max(ordered[i], 1.0))
        ys.append((i + 1) / len(ordered))
    xs.append(max(ordered[-1], 1.0))
    ys.append(1.0)
    return xs, ys


def _html_table(results: Sequence[RunResult]) -> str:
    columns = [
        ("policy", None),
        ("finished", None),
        ("unfinished", None),
        ("avg_jct_s", _seconds),
        ("p99_jct_s", _seconds),
        ("avg_queue_s", _seconds),
        ("p50_queue_s", _seconds),
        ("p99_queue_s", _seconds),
        ("utilization", lambda v: f"{v:.3f}"),
        ("idle_while_pending", lambda v: f"{v:.3f}"),
        ("evictions", None),
        ("moves", None),
        ("min_fairness", lambda v: f"{v:.3f}"),
        ("min_fairness_raw", lambda v: f"{v:.3f}"),
    ]
    head = "".join(f"<th>{html.escape(name)}</th>" for name, _ in columns)
    rows = []
    for r in results:
        cells = []
        for name, fmt in columns:
            value = r.policy if name == "policy" else r.summary.get(name)
            cells.append(f"<td>{html.escape(str(fmt(value) if fmt else value))}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def write_html(out: Path, results: Sequence[RunResult], title: str) -> Path:
    """report.html: summary table, allocated GPUs over time, queueing CDF, per-team queueing
    and fairness, with plotly.js inlined (lazy import: only this function needs plotly)."""
    import plotly.graph_objects as go
    from plotly.offline import get_plotlyjs

    out.mkdir(parents=True, exist_ok=True)
    figures = []
    end = max((r.summary["makespan_s"] for r in results), default=0.0)
    alloc = go.Figure()
    for r in results:
        times, values = resample(r.series, end)
        alloc.add_trace(go.Scatter(x=[t / 86400 for t in times], y=values, name=r.policy))
    capacity = results[0].summary["capacity_gpus"] if results else 0
    alloc.add_hline(y=capacity, line_dash="dot", annotation_text=f"capacity {capacity}")
    alloc.update_layout(
        title="Allocated GPUs over time (time-weighted means)",
        xaxis_title="virtual day",
        yaxis_title="GPUs",
    )
    figures.append(alloc)
    cdf = go.Figure()
    for r in results:
        xs, ys = _cdf([j.queued_s for j in r.jobs if j.finished])
        cdf.add_trace(go.Scatter(x=xs, y=ys, name=r.policy, mode="lines"))
    cdf.update_layout(
        title="Queueing time CDF (finished jobs; 0 s drawn at 1 s)",
        xaxis={"type": "log", "title": "queueing (s)"},
        yaxis_title="share of jobs",
    )
    figures.append(cdf)
    for metric, label in (("avg_queue_s", "Average queueing per team (s)"), ("fairness", None)):
        bars = go.Figure()
        for r in results:
            teams = [row["team"] for row in r.teams]
            values = [row[metric] if row[metric] is not None else math.nan for row in r.teams]
            bars.add_trace(go.Bar(x=teams, y=values, name=r.policy))
        bars.update_layout(
            title=label or "Job-granular fairness per team (share of asking time not short)",
            barmode="group",
        )
        figures.append(bars)
    divs = "\n".join(
        fig.to_html(full_html=False, include_plotlyjs=False, default_height="460px")
        for fig in figures
    )
    text = "\n\n".join([summary_table(results)] + [team_table(r) for r in results])
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title>"
        f'<script type="text/javascript">{get_plotlyjs()}</script>'
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}</style>"
        f"</head><body><h1>{html.escape(title)}</h1>{_html_table(results)}"
        f"{divs}<h2>Tables</h2><pre>{html.escape(text)}</pre></body></html>"
    )
    path = out / "report.html"
    path.write_text(page)
    return path
