"""GPUs, CPU and memory allocated per project over time: usage samples bucketed in the database.

The cycle writes a `UsageSample` per project every `ALLOT_USAGE_SAMPLE_INTERVAL_S` and adds it
to that project's 5-minute and hourly `UsageRollup` buckets (`roll_up`). A query picks the
coarsest source whose buckets divide its step (raw samples for steps under 5 minutes), lets the
database group rows into steps (`EpochBucket`), and returns one value per step and project, with
None where nothing was recorded, so a chart shows a gap instead of inventing a line.

CPU and memory (issue 26) are what the pods of the project's running jobs request, sampled in
millicores and bytes and answered in cores and GiB (`cpu`, `memory`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.db.models import Avg, Count, Func, IntegerField, Q, Sum

from portal.core.moments import in_utc
from portal.jobs.models import UsageRollup, UsageSample
from portal.tenancy.models import Project

MAX_POINTS = 5000  # per series
AUTO_POINTS = 1000  # an automatic step gives at most this many points
NICE_STEPS_S = (1, 2, 5, 10, 30, 60, 300, 3600, 3 * 3600, 6 * 3600, 86400)
SERIES = ("allocated", "quota", "fair_share", "pending", "running", "utilization", "idle", "cpu",
          "memory")  # fmt: skip
MILLIS_PER_CORE, BYTES_PER_GIB = 1000, 2**30
# the CSV's header: time, project, then one column per SERIES
CSV_COLUMNS = ("time", "project", "allocated_gpus", "quota", "fair_share", "pending_jobs",
               "running_jobs", "utilization", "idle_gpus", "allocated_cpu_cores",
               "allocated_memory_gib")  # fmt: skip


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
            "projects": [
                {"name": name, **series, "idle_gpu_hours": self.idle_gpu_hours(name)}
                for name, series in self.projects.items()
            ],
            "cluster": self.cluster,
        }

    def idle_gpu_hours(self, name: str) -> float:
        """GPU-hours the project held idle (under 5 % utilization) over the range."""
        idle = [value for value in self.projects[name]["idle"] if value is not None]
        return round(sum(idle) * self.step_s / 3600, 3)

    def csv_rows(self) -> Iterable[list]:
        """time, project, then the mean of each series over the step."""
        yield list(CSV_COLUMNS)
        for name, series in self.projects.items():
            for index, moment in enumerate(self.times):
                values = [series[key][index] for key in SERIES]
                if all(value is None for value in values):
                    continue
                yield [moment.isoformat(), name, *values]


def allocation(start: datetime, end: datetime, step: int, visible: frozenset[str] | None) -> Series:
    """Per-project series over [start, end) in `step`-second steps for the projects in
    `visible` (None: all); the cluster series sum over every project (they are everyone's)."""
    resolution = source_for(step)
    first = math.floor(start.timestamp() / step) * step
    last = math.ceil(end.timestamp() / step) * step
    count = max(1, (last - first) // step)
    times = [datetime.fromtimestamp(first + i * step, UTC) for i in range(count)]
    names = dict(Project.objects.values_list("id", "name"))
    projects: dict[str, tuple[list, ...]] = {}  # name -> one list per SERIES
    allocated_total, pending_total, running_total = [0.0] * count, [0.0] * count, [0.0] * count
    cpu_total, memory_total = [0.0] * count, [0.0] * count
    busy, weight, seen = [0.0] * count, [0.0] * count, [False] * count
    simulated = False
    for row in _rows(resolution, datetime.fromtimestamp(first, UTC), end, step, first):
        (project_id, index, allocated, quota, fair, pending, running, utilization, idle, cpu,
         memory, sim) = row  # fmt: skip
        name = names.get(project_id)
        if name is None or not 0 <= index < count:
            continue
        series = projects.get(name)
        if series is None:
            series = projects[name] = tuple([None] * count for _ in SERIES)
        series[0][index], series[1][index], series[2][index] = allocated, quota, fair
        series[3][index], series[4][index], series[5][index] = pending, running, utilization
        series[6][index], series[7][index], series[8][index] = idle, cpu, memory
        simulated = simulated or sim
        seen[index] = True
        allocated_total[index] += allocated
        pending_total[index] += pending
        running_total[index] += running
        cpu_total[index] += cpu
        memory_total[index] += memory
        if utilization is not None and allocated:
            busy[index] += utilization * allocated
            weight[index] += allocated
    cluster = {
        key: [round(total[i], 3) if seen[i] else None for i in range(count)]
        for key, total in (("allocated", allocated_total), ("pending", pending_total),
                           ("running", running_total), ("cpu", cpu_total),
                           ("memory", memory_total))
    }  # fmt: skip
    cluster["utilization"] = [
        round(busy[i] / weight[i], 3) if weight[i] else None for i in range(count)
    ]
    _add_idle_projects(projects, seen)
    shown = {
        name: dict(zip(SERIES, projects[name], strict=True))
        for name in sorted(projects)
        if visible is None or name in visible
    }
    label = f"rollup-{resolution}s" if resolution else "samples"
    return Series(start, end, step, label, times, shown, cluster, simulated)


def _add_idle_projects(projects: dict[str, tuple[list, ...]], seen: list[bool]) -> None:
    """Projects with no sample in the range (nothing run yet, as on a fresh install) still get
    their line: today's quota at every step, nothing allocated, pending or running wherever
    the sampler ran (issue 24 item 7)."""
    count = len(seen)
    for name, quota in Project.objects.exclude(name__in=projects).values_list("name", "quota"):
        zero = [0.0 if seen[i] else None for i in range(count)]
        projects[name] = ([*zero], [float(quota)] * count, [None] * count, [*zero], [*zero],
                          [None] * count, [*zero], [*zero], [*zero])  # fmt: skip


def _sql(table: str, time: str, values: tuple[str, ...], simulated: str, grouped: bool) -> str:
    """One SELECT of (project, step index, the nine means rounded to 3 places, simulated).

    Rounding is float8 arithmetic (not numeric), and the step index is computed in SQL, so the
    rows arrive ready to place.
    """
    if grouped:
        index = (f"(FLOOR(EXTRACT(EPOCH FROM {time}) / %(step)s) * %(step)s"
                 " - %(first)s)::bigint / %(step)s")  # fmt: skip
    else:
        index = f"(EXTRACT(EPOCH FROM {time})::bigint - %(first)s) / %(step)s"
    rounded = ", ".join(f"ROUND(({value}) * 1000) / 1000" for value in values)
    where = f"{time} >= %(start)s AND {time} < %(end)s"
    if table == "jobs_usagerollup":
        where += " AND resolution_s = %(resolution)s AND samples > 0"
    group = " GROUP BY project_id, i" if grouped else ""
    return (
        f"SELECT project_id, {index} AS i, {rounded}, {simulated} FROM {table} WHERE {where}{group}"
    )


# Means as SUM / COUNT: a float8 SUM keeps one number per group where AVG keeps three (and
# numeric ones for integers), so the grouping stays in memory with the CPU and memory columns
_RAW = _sql(
    "jobs_usagesample", "time",
    ("SUM(allocated_gpus) / COUNT(*)", "SUM(quota) / COUNT(*)", "SUM(fair_share) / COUNT(*)",
     "SUM(pending_jobs)::float8 / COUNT(*)", "SUM(running_jobs)::float8 / COUNT(*)",
     "SUM(utilization) / NULLIF(COUNT(utilization), 0)", "SUM(idle_gpus) / COUNT(*)",
     f"SUM(allocated_cpu_millis::float8) / COUNT(*) / {MILLIS_PER_CORE}",
     f"SUM(allocated_memory_bytes::float8) / COUNT(*) / {BYTES_PER_GIB}"),
    "BOOL_OR(simulated)", grouped=True,
)  # fmt: skip
_ROLLUP = _sql(
    "jobs_usagerollup", "bucket",
    ("SUM(allocated_sum) / SUM(samples)", "SUM(quota_sum) / SUM(samples)",
     "SUM(fair_share_sum) / SUM(samples)", "SUM(pending_sum) / SUM(samples)",
     "SUM(running_sum) / SUM(samples)",
     "SUM(utilization_sum) / NULLIF(SUM(utilization_samples), 0)",
     "SUM(idle_sum) / SUM(samples)",
     f"SUM(cpu_millis_sum) / SUM(samples) / {MILLIS_PER_CORE}",
     f"SUM(memory_bytes_sum) / SUM(samples) / {BYTES_PER_GIB}"),
    "BOOL_OR(simulated)", grouped=True,
)  # fmt: skip
_ROLLUP_AS_IS = _sql(
    "jobs_usagerollup", "bucket",
    ("allocated_sum / samples", "quota_sum / samples", "fair_share_sum / samples",
     "pending_sum / samples", "running_sum / samples",
     "utilization_sum / NULLIF(utilization_samples, 0)", "idle_sum / samples",
     f"cpu_millis_sum / samples / {MILLIS_PER_CORE}",
     f"memory_bytes_sum / samples / {BYTES_PER_GIB}"),
    "simulated", grouped=False,
)  # fmt: skip


def _rows(resolution: int, start: datetime, end: datetime, step: int, first: int) -> list[tuple]:
    """(project id, step index, allocated, quota, fair share, pending, running, utilization,
    idle, CPU cores, memory GiB, simulated) per project and step: the means of the samples in it.

    PostgreSQL does the grouping in one statement; a step equal to the rollup's
    resolution reads its rows as they are. Elsewhere (SQLite, the embedded default) the ORM does
    the same with portable expressions.
    """
    if connection.vendor != "postgresql":
        return _rows_portable(resolution, start, end, step, first)
    sql = _RAW if resolution == 0 else _ROLLUP_AS_IS if step == resolution else _ROLLUP
    params = {"step": step, "first": first, "start": start, "end": end, "resolution": resolution}
    import psycopg

    connection.ensure_connection()
    # psycopg's binary protocol: floats arrive without text parsing, twice as fast for 72k rows
    # (Django's own cursors bind client-side, which cannot read binary results)
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute(sql, params, binary=True)
        return cursor.fetchall()


def _rows_portable(resolution: int, start: datetime, end: datetime, step: int, first: int):
    if resolution == 0:
        rows = (
            UsageSample.objects.filter(time__gte=start, time__lt=end)
            .annotate(b=EpochBucket("time", step))
            .values("project_id", "b")
            .annotate(
                a=Avg("allocated_gpus"), q=Avg("quota"), f=Avg("fair_share"),
                p=Avg("pending_jobs"), r=Avg("running_jobs"), u=Avg("utilization"),
                i=Avg("idle_gpus"), c=Avg("allocated_cpu_millis"),
                m=Avg("allocated_memory_bytes"), sim=Count("id", filter=Q(simulated=True)),
            )
        )  # fmt: skip
        means = [(row, 1, 1) for row in rows]
    else:
        sums = (
            UsageRollup.objects.filter(resolution_s=resolution, bucket__gte=start,
                                       bucket__lt=end, samples__gt=0)
            .annotate(b=EpochBucket("bucket", step))
            .values("project_id", "b")
            .annotate(
                n=Sum("samples"), a=Sum("allocated_sum"), q=Sum("quota_sum"),
                f=Sum("fair_share_sum"), p=Sum("pending_sum"), r=Sum("running_sum"),
                u=Sum("utilization_sum"), un=Sum("utilization_samples"), i=Sum("idle_sum"),
                c=Sum("cpu_millis_sum"), m=Sum("memory_bytes_sum"),
                sim=Count("id", filter=Q(simulated=True)),
            )
        )  # fmt: skip
        means = [(row, row["n"], row["un"]) for row in sums]
    return [
        (
            row["project_id"], (row["b"] - first) // step,
            round(row["a"] / n, 3), round(row["q"] / n, 3), round(row["f"] / n, 3),
            round(row["p"] / n, 3), round(row["r"] / n, 3),
            round(row["u"] / un, 3) if row["u"] is not None and un else None,
            round(row["i"] / n, 3),
            round(row["c"] / n / MILLIS_PER_CORE, 3), round(row["m"] / n / BYTES_PER_GIB, 3),
            bool(row["sim"]),
        )
        for row, n, un in means
    ]  # fmt: skip


_UPSERT = """
INSERT INTO jobs_usagerollup (resolution_s, bucket, project_id, samples, quota_sum,
    fair_share_sum, allocated_sum, running_sum, pending_sum, utilization_sum,
    utilization_samples, idle_sum, cpu_millis_sum, memory_bytes_sum, simulated)
VALUES (%s, %s, %s, 1, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (resolution_s, project_id, bucket) DO UPDATE SET
    samples = jobs_usagerollup.samples + 1,
    quota_sum = jobs_usagerollup.quota_sum + excluded.quota_sum,
    fair_share_sum = jobs_usagerollup.fair_share_sum + excluded.fair_share_sum,
    allocated_sum = jobs_usagerollup.allocated_sum + excluded.allocated_sum,
    running_sum = jobs_usagerollup.running_sum + excluded.running_sum,
    pending_sum = jobs_usagerollup.pending_sum + excluded.pending_sum,
    utilization_sum = jobs_usagerollup.utilization_sum + excluded.utilization_sum,
    utilization_samples = jobs_usagerollup.utilization_samples + excluded.utilization_samples,
    idle_sum = jobs_usagerollup.idle_sum + excluded.idle_sum,
    cpu_millis_sum = jobs_usagerollup.cpu_millis_sum + excluded.cpu_millis_sum,
    memory_bytes_sum = jobs_usagerollup.memory_bytes_sum + excluded.memory_bytes_sum,
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
                 sample.utilization or 0.0, int(measured), sample.idle_gpus,
                 sample.allocated_cpu_millis, sample.allocated_memory_bytes, sample.simulated)
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
        values[field] = in_utc(parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))
    if errors:
        return None, None, errors
    end = values["to"]
    start = values["from"] or end - timedelta(hours=24)
    if start >= end:
        return None, None, {"from": ["must be before 'to'"]}
    if end - start > timedelta(days=400):
        return None, None, {"from": ["the range may span at most 400 days"]}
    return start, end, {}
