"""GPU-hours of job runs over time: the one place that cuts runs into periods (issue 23).

A run (`JobRun`) holds `gpus` GPUs (gpus x pods) from `started_at` to `ended_at`, or to `now`
while it goes on, exactly what `JobRun.gpu_hours(now)` counts on the job page. Here a run's time
is cut at any edges (midnights, month starts, hours, t0 and t1) in whole **units** of one
milli-GPU for one microsecond, integers: the pieces of a run cut at midnight add up to the whole
run bit for bit, and so do the sums of many runs. `hours(units)` turns a sum into GPU-hours
(one correctly rounded division) only at the end.

Accounting (`portal.dashboards.accounting`) and the scheduler's usage over time both read it.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet

from portal.jobs.models import JobRun, JobType

UNITS_PER_GPU_HOUR = 1000 * 3600 * 1_000_000  # milli-GPUs x microseconds in one GPU-hour


@dataclass(frozen=True)
class Span:
    """A run as plain data: who held how many milli-GPUs from `start` to `end` (`now` while it
    goes on; `running` says so)."""

    run_id: int
    job_id: int | None  # None once the job was deleted (its run stays, for the accounting)
    job_name: str
    project_id: int
    project: str
    user: str  # the job's submitter's username; "" when the account was deleted or none
    interactive: bool
    milli: int
    start: datetime
    end: datetime
    running: bool
    cpu_millis: int = 0  # CPU and memory held, per pod x pods (issue 26)
    memory_bytes: int = 0


def micros(start: datetime, end: datetime) -> int:
    """Whole microseconds from `start` to `end` (negative when `end` is earlier), exactly."""
    delta: timedelta = end - start
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def milli_gpus(gpus: float) -> int:
    """A run's GPUs in milli-GPUs (GPU counts have two decimals at most, so this is exact)."""
    return round(gpus * 1000)


def hours(units: int) -> float:
    """GPU-hours of `units` milli-GPU-microseconds."""
    return units / UNITS_PER_GPU_HOUR


def spans(runs: QuerySet[JobRun], t0: datetime, t1: datetime, now: datetime) -> list[Span]:
    """The runs of `runs` that held GPUs at some time in [t0, t1) (and before `now`), as Spans,
    oldest start first. A run still going on ends at `now`."""
    overlapping = runs.filter(started_at__lt=min(t1, now)).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=t0)
    )
    rows = overlapping.values_list(
        "id", "job_id", "job_name", "project_id", "project__name",
        "user__username", "job_type", "gpus", "started_at", "ended_at", "cpu_millis",
        "memory_bytes",
    ).order_by("started_at", "id")  # fmt: skip
    return [
        Span(run_id=run_id, job_id=job_id, job_name=name, project_id=project_id, project=project,
             user=user or "", interactive=kind == JobType.INTERACTIVE, milli=milli_gpus(gpus),
             start=started, end=ended or max(now, started), running=ended is None,
             cpu_millis=cpu, memory_bytes=memory)
        for (run_id, job_id, name, project_id, project, user, kind, gpus, started, ended, cpu,
             memory) in rows
    ]  # fmt: skip


def units_between(span: Span, t0: datetime, t1: datetime) -> int:
    """The span's units inside [t0, t1)."""
    return span.milli * max(micros(max(span.start, t0), min(span.end, t1)), 0)


def cut(span: Span, edges: Sequence[datetime]) -> Iterable[tuple[int, int]]:
    """(i, units) for each period [edges[i], edges[i+1]) the span holds GPUs in; nothing outside
    edges[0]..edges[-1]. `edges` are sorted."""
    first = max(bisect_right(edges, span.start) - 1, 0)
    for i in range(first, len(edges) - 1):
        if edges[i] >= span.end:
            break
        units = units_between(span, edges[i], edges[i + 1])
        if units:
            yield i, units


def gpu_hours_by_project(
    runs: QuerySet[JobRun], t0: datetime, t1: datetime, now: datetime
) -> dict[str, float]:
    """GPU-hours each project's runs held in [t0, t1), by project name (projects with no run
    in the range are absent). `runs` is usually `JobRun.objects.all()`."""
    totals: dict[str, int] = {}
    for span in spans(runs, t0, t1, now):
        totals[span.project] = totals.get(span.project, 0) + units_between(span, t0, t1)
    return {name: hours(units) for name, units in totals.items() if units}
