"""GPUs allocated per project over time: usage samples bucketed in the database.

The cycle writes a `UsageSample` per project every `ALLOT_USAGE_SAMPLE_INTERVAL_S` and adds it
to that project's 5-minute and hourly `UsageRollup` buckets (`roll_up`). A query picks the
coarsest source whose buckets divide its step (raw samples for steps under 5 minutes), lets the
database group rows into steps (`EpochBucket`), and returns one value per step and project, with
None where nothing was recorded, so a chart shows a gap instead of inventing a line.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Avg, Count, Func, IntegerField, Q, Sum

from portal.jobs.models import UsageRollup, UsageSample
from portal.tenancy.models import Project

MAX_POINTS = 5000  # per series
AUTO_POINTS = 1000  # an automatic step gives at most this many points
NICE_STEPS_S = (1, 2, 5, 10, 30, 60, 300, 900, 3600, 3 * 3600, 6 * 3600, 86400)
SERIES = ("allocated", "quota", "fair_share", "pending", "running", "utilization")


class EpochBucket(Func):
    """Seconds since the epoch of the start of the `step`-second bucket holding a timestamp."""

    output_field = IntegerField()

    def __init__(self, expression, step: int):
        super().__init__(expression, step=int(step))

    def as_sql(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        step = self.extra["step"]
        return f"(FLOOR(EXTRACT(EPOCH FROM {sql}) / {step}) * {step})::bigint", params

    def as_sqlite(self, compiler, connection, **extra):
        sql, params = compiler.compile(self.source_expressions[0])
        step = self.extra["step"]
        return f"((CAST(strftime('%%s', {sql}) AS INTEGER) / {step}) * {step})", params


def auto_step(start: datetime, end: datetime, sample_s: float) -> int:
    """The smallest nice step that gives at most AUTO_POINTS points and is no finer than samples."""
    span = (end - start).total_seconds()
    floor = max(sample_s, span / AUTO_POINTS)
    return next((step for step in NICE_STEPS_S if step >= floor), NICE_STEPS_S[-1])


def source_for(step: int) -> int:
    """The rollup resolution to read for `step` (0: the raw samples)."""
    return next((r for r in sorted(UsageRollup.RESOLUTIONS, reverse=True) if step % r == 0), 0)


@dataclass(frozen=True)
class Series:
    """Values per step (`times` are the steps' starts) for each project and the cluster."""

    start: datetime
    end: datetime
    step_s: int
    source: str
    times: list[datetime]
    projects: dict[str, dict[str, list[float | None]]]
    cluster: dict[str, list[float | None]]
    simulated: bool

    def as_dict(self) -> dict:
        """JSON-ready: ISO times, one entry per project with its series."""
        return {
            "from": self.start.isoformat(),
            "to": self.end.isoformat(),
            "step_s": self.step_s,
            "source": self.source,
            "simulated": self.simulated,
            "times": [t.isoformat() for t in self.times],
            "projects": [{"name": name, **series} for name, series in self.projects.items()],
            "cluster": self.cluster,
        }

    def csv_rows(self) -> Iterable[list]:
        """time, project, allocated, quota, fair share, pending, running, utilization."""
        yield ["time", "project", "allocated_gpus", "quota", "fair_share", "pending_jobs",
               "running_jobs", "utilization"]  # fmt: skip
        for name, series in self.projects.items():
            for index, moment in enumerate(self.times):
                values = [series[key][index] for key in SERIES]
                if all(value is None for value in values):
                    continue
                allocated, quota, fair, pending, running, util = values
                yield [moment.isoformat(), name, allocated, quota, fair, pending, running, util]


def allocation(start: datetime, end: datetime, step: int, visible: frozenset[str] | None) -> Series:
    """Per-project series over [start, end) in `step`-second steps for the projects in
    `visible` (None: all); the cluster series sum over every project (they are everyone's)."""
    resolution = source_for(step)
    first = math.floor(start.timestamp() / step) * step
    last = math.ceil(end.timestamp() / step) * step
    count = max(1, (last - first) // step)
    times = [datetime.fromtimestamp(first + i * step, UTC) for i in range(count)]
    names = dict(Project.objects.values_list("id", "name"))
    rows = _rows(resolution, datetime.fromtimestamp(first, UTC), end, step)
    projects: dict[str, dict[str, list]] = {}
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0] * count)
    weight = [0.0] * count
    simulated = False
    for row in rows:
        name = names.get(row["project_id"])
        index = (row["b"] - first) // step
        if name is None or not 0 <= index < count:
            continue
        simulated = simulated or bool(row.get("simulated"))
        if name not in projects:
            projects[name] = {key: [None] * count for key in SERIES}
        for key in SERIES:
            projects[name][key][index] = None if row[key] is None else round(row[key], 3)
        totals["allocated"][index] += row["allocated"] or 0.0
        totals["pending"][index] += row["pending"] or 0.0
        totals["running"][index] += row["running"] or 0.0
        if row["utilization"] is not None and row["allocated"]:
            totals["utilization"][index] += row["utilization"] * row["allocated"]
            weight[index] += row["allocated"]
    seen = [any(p["allocated"][i] is not None for p in projects.values()) for i in range(count)]
    cluster = {
        key: [round(totals[key][i], 3) if seen[i] else None for i in range(count)]
        for key in ("allocated", "pending", "running")
    }
    cluster["utilization"] = [
        round(totals["utilization"][i] / weight[i], 3) if weight[i] else None for i in range(count)
    ]
    shown = {
        name: projects[name] for name in sorted(projects) if visible is None or name in visible
    }
    label = f"rollup-{resolution}s" if resolution else "samples"
    return Series(start, end, step, label, times, shown, cluster, simulated)


def _rows(resolution: int, start: datetime, end: datetime, step: int) -> list[dict]:
    """One row per project and step: averages of the samples in it."""
    if resolution == 0:
        rows = (
            UsageSample.objects.filter(time__gte=start, time__lt=end)
            .annotate(b=EpochBucket("time", step))
            .values("project_id", "b")
            .annotate(
                allocated=Avg("allocated_gpus"), quota=Avg("quota"), fair_share=Avg("fair_share"),
                pending=Avg("pending_jobs"), running=Avg("running_jobs"),
                utilization=Avg("utilization"), simulated=Count("id", filter=Q(simulated=True)),
            )
        )  # fmt: skip
        return list(rows)
    sums = (
        UsageRollup.objects.filter(resolution_s=resolution, bucket__gte=start, bucket__lt=end)
        .annotate(b=EpochBucket("bucket", step))
        .values("project_id", "b")
        .annotate(
            n=Sum("samples"), a=Sum("allocated_sum"), q=Sum("quota_sum"), f=Sum("fair_share_sum"),
            p=Sum("pending_sum"), r=Sum("running_sum"), u=Sum("utilization_sum"),
            un=Sum("utilization_samples"), simulated=Count("id", filter=Q(simulated=True)),
        )
    )  # fmt: skip
    return [
        {
            "project_id": row["project_id"],
            "b": row["b"],
            "allocated": row["a"] / row["n"],
            "quota": row["q"] / row["n"],
            "fair_share": row["f"] / row["n"],
            "pending": row["p"] / row["n"],
            "running": row["r"] / row["n"],
            "utilization": row["u"] / row["un"] if row["un"] else None,
            "simulated": row["simulated"],
        }
        for row in sums
        if row["n"]
    ]


_UPSERT = """
INSERT INTO jobs_usagerollup (resolution_s, bucket, project_id, samples, quota_sum,
    fair_share_sum, allocated_sum, running_sum, pending_sum, utilization_sum,
    utilization_samples, simulated)
VALUES (%s, %s, %s, 1, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (resolution_s, project_id, bucket) DO UPDATE SET
    samples = jobs_usagerollup.samples + 1,
    quota_sum = jobs_usagerollup.quota_sum + excluded.quota_sum,
    fair_share_sum = jobs_usagerollup.fair_share_sum + excluded.fair_share_sum,
    allocated_sum = jobs_usagerollup.allocated_sum + excluded.allocated_sum,
    running_sum = jobs_usagerollup.running_sum + excluded.running_sum,
    pending_sum = jobs_usagerollup.pending_sum + excluded.pending_sum,
    utilization_sum = jobs_usagerollup.utilization_sum + excluded.utilization_sum,
    utilization_samples = jobs_usagerollup.utilization_samples + excluded.utilization_samples,
    simulated = excluded.simulated
"""


def roll_up(samples: Iterable[UsageSample]) -> None:
    """Add each sample to its project's bucket at every rollup resolution (one statement)."""
    params = []
    for sample in samples:
        for resolution in UsageRollup.RESOLUTIONS:
            seconds = math.floor(sample.time.timestamp() / resolution) * resolution
            bucket = datetime.fromtimestamp(seconds, UTC)
            measured = sample.utilization is not None
            params.append(
                (resolution, bucket, sample.project_id, sample.quota, sample.fair_share,
                 sample.allocated_gpus, sample.running_jobs, sample.pending_jobs,
                 sample.utilization or 0.0, int(measured), sample.simulated)
            )  # fmt: skip
    if params:
        with connection.cursor() as cursor:
            cursor.executemany(_UPSERT, params)


def parse_range(raw_from: str | None, raw_to: str | None, now: datetime) -> tuple:
    """(start, end) from ISO 8601 texts, or errors by field; defaults: the last 24 hours."""
    from django.utils.dateparse import parse_datetime

    errors, values = {}, {}
    for field, raw, default in (("to", raw_to, now), ("from", raw_from, None)):
        if raw in (None, ""):
            values[field] = default
            continue
        try:
            parsed = parse_datetime(raw) if len(raw) < 64 else None
        except ValueError:  # well formed, impossible (month 13)
            parsed = None
        if parsed is None:
            errors[field] = [f"{raw[:64]!r} is not an ISO 8601 date and time"]
            continue
        values[field] = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    if errors:
        return None, None, errors
    end = values["to"]
    start = values["from"] or end - timedelta(hours=24)
    if start >= end:
        return None, None, {"from": ["must be before 'to'"]}
    if end - start > timedelta(days=400):
        return None, None, {"from": ["the range may span at most 400 days"]}
    return start, end, {}
