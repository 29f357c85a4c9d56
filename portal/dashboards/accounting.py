"""GPU-hour accounting (issue 23): per project, department or user, per day or month, what was
allocated, used and taken above quota - Run:AI's consumption report, Slurm's `sreport`.

Every figure is computed from runs (`JobRun`, cut by `portal.jobs.usage`), so it adds up with the
GPU-hours the job pages show. Within a range, time is swept project by project in segments
during which nothing changes (cut at every run's start and end, every period's start and every
hour), and each segment adds to its period and group:

- **allocated**: GPUs the runs held x time, the job pages' GPU-hours cut into periods.
- **used**: allocated x the project's GPU utilization in that hour, as the cycle measured it
  (the hourly `UsageRollup`: the mean of its samples). An hour with no measurement adds to
  `unmeasured` instead; with nothing measured at all, used is None ("not measured"). A user's
  used GPU-hours apply their project's utilization (the agents measure per project). Samples of
  the simulated agent are synthetic: `used_basis` says "simulated".
- **over quota**: the part of a project's allocation above its quota at each moment. The quota
  is the one the cycle recorded beside its samples in that hour, else today's. Which runs were
  over quota follows the scheduler's own order (R9): interactive runs first and then the oldest
  runs fill the quota, the newest runs are the borrowed ones (reclaim evicts newest first), a run
  straddling the line is over by the part above it. A department's figures are its projects'.
- **core-hours** and **memory GiB-hours** (issue 26): the CPU cores and memory the runs held
  (their pods' requests) x time, CPU-only runs included; `runs` counts the runs that held GPUs.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from itertools import pairwise

from django.db.models import Q, QuerySet
from django.utils import timezone

from portal import access
from portal.core.moments import in_utc
from portal.jobs.models import JobRun, UsageRollup
from portal.jobs.usage import UNITS_PER_GPU_HOUR, Span, hours, micros, milli_gpus, spans
from portal.tenancy.models import Project

GROUPS = ("project", "department", "user")
PERIODS = ("day", "month")
MAX_DAYS = 400
HOUR = timedelta(hours=1)
DATE_HINT = "must be a date (2026-11-25) or a date and time (2026-11-25T12:04:00Z)"
CSV_FIGURES = ["allocated_gpu_hours", "used_gpu_hours", "unmeasured_gpu_hours", "utilization",
               "used_basis", "over_quota_gpu_hours", "runs", "allocated_core_hours",
               "allocated_memory_gib_hours"]  # fmt: skip
UNITS_PER_CORE_HOUR = 1000 * 3600 * 1_000_000  # millicores x microseconds
UNITS_PER_GIB_HOUR = 2**30 * 3600 * 1_000_000  # bytes x microseconds


@dataclass(frozen=True)
class Query:
    """What to report: grouped by `group_by`, per `period`, over [since, until)."""

    group_by: str
    period: str
    since: datetime
    until: datetime
    project: str | None = None
    user: str | None = None


def parse(params: Mapping[str, str], visible: Iterable[str], now: datetime) -> tuple:
    """(Query, {}) from query parameters, or (None, errors by field). `visible` are the project
    names the asker may see: another is an error, said the same as a missing one."""
    text = {name: (params.get(name) or "").strip() for name in
            ("group_by", "period", "since", "until", "project", "user")}  # fmt: skip
    errors: dict[str, list[str]] = {}
    group_by, period = text["group_by"] or "project", text["period"] or "day"
    if group_by not in GROUPS:
        errors["group_by"] = [f"{group_by[:40]!r} is not one of {', '.join(GROUPS)}"]
    if period not in PERIODS:
        errors["period"] = [f"{period[:40]!r} is not one of {', '.join(PERIODS)}"]
    moments = {}
    for name in ("since", "until"):
        if text[name]:
            moments[name] = moment(text[name], end=name == "until")
            if moments[name] is None:
                errors[name] = [DATE_HINT]
    if text["project"] and text["project"] not in set(visible):
        errors["project"] = [f"no project {text['project'][:64]!r} among those you may see"]
    if errors:
        return None, errors
    until = moments.get("until") or now
    since = moments.get("since") or default_since(until, period)
    if since >= until:
        return None, {"since": ["must be before 'until'"]}
    if until - since > timedelta(days=MAX_DAYS):
        return None, {"since": [f"the range may span at most {MAX_DAYS} days"]}
    return Query(group_by, period, since, until, text["project"] or None,
                 text["user"] or None), {}  # fmt: skip


def moment(raw: str, *, end: bool = False) -> datetime | None:
    """An ISO 8601 date or date-time, aware (the portal's time zone when it has none); a bare date
    is its midnight, the next day's for an `until` so that the day is included."""
    try:
        if len(raw) == 10:
            day = date.fromisoformat(raw) + timedelta(days=1 if end else 0)
            return datetime.combine(day, time.min, tzinfo=timezone.get_default_timezone())
        parsed = datetime.fromisoformat(raw.replace("Z", "+00:00")) if len(raw) < 40 else None
    except OverflowError:  # the day after 9999-12-31
        return datetime.max.replace(tzinfo=UTC)
    except ValueError:
        return None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed)
    return parsed if parsed is None else in_utc(parsed)


def _start_of(moment_: datetime, period: str) -> date:
    local = timezone.localtime(moment_).date()
    return local.replace(day=1) if period == "month" else local


def _next(day: date, period: str) -> date:
    if period == "day":
        return day + timedelta(days=1)
    return date(day.year + day.month // 12, day.month % 12 + 1, 1)


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=timezone.get_default_timezone())


def default_since(until: datetime, period: str) -> datetime:
    """The last 7 days (period=day) or the last 3 months (month), whole periods in the portal's
    time zone, the current one included."""
    first = _start_of(until - timedelta(microseconds=1), period)
    for _ in range(6 if period == "day" else 2):
        first = (
            first - timedelta(days=1) if period == "day" else (first - timedelta(1)).replace(day=1)
        )
    return _midnight(first)


@dataclass(frozen=True)
class Period:
    label: str  # 2026-11-25, or 2026-11
    start: datetime
    end: datetime


def periods(since: datetime, until: datetime, period: str) -> list[Period]:
    """The days or months (midnights in the portal's time zone) over [since, until), the first
    and last cut to the range."""
    out, day = [], _start_of(since, period)
    while _midnight(day) < until:
        following = _next(day, period)
        label = day.isoformat() if period == "day" else day.isoformat()[:7]
        out.append(Period(label, max(_midnight(day), since), min(_midnight(following), until)))
        day = following
    return out


@dataclass
class Piece:
    """What one run held in one period: units, over quota, measured units, used, simulated, and
    its CPU and memory in millicore- and byte-microseconds."""

    units: int = 0
    over: int = 0
    measured: int = 0
    used: float = 0.0
    simulated: bool = False
    cpu: int = 0
    memory: int = 0

    def add(self, units: int, over: int, utilization: float | None, simulated: bool) -> None:
        self.units += units
        self.over += over
        if utilization is not None:
            self.measured += units
            self.used += units * utilization
            self.simulated = self.simulated or simulated


@dataclass
class Figures:
    """Sums in milli-GPU-microseconds (`units`), exact; `used` is units x utilization."""

    units: int = 0
    measured: int = 0
    used: float = 0.0
    over: int = 0
    simulated: bool = False
    runs: set[int] = field(default_factory=set)  # those that held GPUs
    cpu: int = 0
    memory: int = 0

    def add(self, piece: Piece, run: int) -> None:
        self.units += piece.units
        self.over += piece.over
        self.measured += piece.measured
        self.used += piece.used
        self.simulated = self.simulated or piece.simulated
        self.cpu += piece.cpu
        self.memory += piece.memory
        if piece.units:
            self.runs.add(run)

    @property
    def basis(self) -> str:
        """How `used` is known: measured, partly measured, simulated (synthetic), not measured."""
        if not self.measured:
            return "not measured"
        if self.simulated:
            return "simulated"
        return "measured" if self.measured == self.units else "partly measured"

    def as_dict(self) -> dict:
        return {
            "allocated_gpu_hours": hours(self.units),
            "used_gpu_hours": self.used / UNITS_PER_GPU_HOUR if self.measured else None,
            "unmeasured_gpu_hours": hours(self.units - self.measured),
            "utilization": round(self.used / self.measured, 4) if self.measured else None,
            "used_basis": self.basis,
            "over_quota_gpu_hours": hours(self.over),
            "runs": len(self.runs),
            "allocated_core_hours": self.cpu / UNITS_PER_CORE_HOUR,
            "allocated_memory_gib_hours": self.memory / UNITS_PER_GIB_HOUR,
        }


@dataclass
class Report:
    query: Query
    now: datetime
    periods: list[Period]
    rows: dict[tuple[int, str | None], Figures] = field(default_factory=dict)
    totals: dict[str | None, Figures] = field(default_factory=dict)
    total: Figures = field(default_factory=Figures)

    def add(self, period: int, key, piece: Piece, run: int) -> None:
        for figures in (self.rows.setdefault((period, key), Figures()),
                        self.totals.setdefault(key, Figures()), self.total):  # fmt: skip
            figures.add(piece, run)

    def as_dict(self) -> dict:
        group = self.query.group_by
        return {
            "group_by": group, "period": self.query.period,
            "since": self.query.since.isoformat(), "until": self.query.until.isoformat(),
            "now": self.now.isoformat(), "timezone": str(timezone.get_default_timezone()),
            "project": self.query.project, "user": self.query.user,
            "periods": [{"period": p.label, "start": p.start.isoformat(),
                         "end": p.end.isoformat()} for p in self.periods],
            "rows": [{"period": self.periods[i].label, group: key, **figures.as_dict()}
                     for (i, key), figures in sorted(self.rows.items(), key=_order)],
            "totals": [{group: key, **figures.as_dict()}
                       for key, figures in sorted(self.totals.items(), key=lambda kv: kv[0] or "")],
            "total": self.total.as_dict(),
        }  # fmt: skip

    def csv_rows(self) -> Iterable[list]:
        """period, start, end, the group, then CSV_FIGURES; a `total` row per group at the end."""
        group = self.query.group_by
        yield ["period", "start", "end", group, *CSV_FIGURES]
        for (i, key), figures in sorted(self.rows.items(), key=_order):
            p = self.periods[i]
            yield [p.label, p.start.isoformat(), p.end.isoformat(), key or "", *_csv(figures)]
        since, until = self.query.since.isoformat(), self.query.until.isoformat()
        for key, figures in sorted(self.totals.items(), key=lambda kv: kv[0] or ""):
            yield ["total", since, until, key or "", *_csv(figures)]


def _order(item) -> tuple:
    (i, key), _ = item
    return i, key or ""


def _csv(figures: Figures) -> list:
    values = figures.as_dict()
    return ["" if values[name] is None else values[name] for name in CSV_FIGURES]


def for_user(user, params: Mapping[str, str], now: datetime) -> tuple[Report | None, dict]:
    """(the report `params` ask for over what `user` may see, {}), or (None, errors by field):
    every team's runs for a cluster admin, their projects' for others (`access.runs_for`)."""
    projects = access.projects_for(user)
    query, errors = parse(params, projects.values_list("name", flat=True), now)
    if errors:
        return None, errors
    return build(query, access.runs_for(user), projects, now), {}


def build(query: Query, runs: QuerySet[JobRun], projects: QuerySet[Project], now: datetime):
    """The report of `query` over `runs` (those the asker may see) of `projects`."""
    # a CPU-only job's runs hold no GPU, but CPU and memory (issue 26)
    runs = runs.filter(Q(gpus__gt=0) | Q(cpu_millis__gt=0) | Q(memory_bytes__gt=0))
    if query.project:
        runs = runs.filter(project__name=query.project)
    if query.user:
        runs = runs.filter(user__username=query.user)
    report = Report(query, now, periods(query.since, query.until, query.period))
    end = min(query.until, now)
    if end <= query.since:
        return report
    info = {pid: (name, dept, milli_gpus(float(quota))) for pid, name, dept, quota in
            projects.values_list("id", "name", "department__name", "quota")}  # fmt: skip
    hourly = _hourly(list(info), query.since, end)
    starts = [p.start for p in report.periods]
    by_project: dict[int, list[Span]] = {}
    for span in spans(runs, query.since, end, now):
        by_project.setdefault(span.project_id, []).append(span)
    for pid, held in by_project.items():
        name, dept, quota = info.get(pid, ("", None, 0))
        keys = {"project": lambda s, n=name: n, "department": lambda s, d=dept: d,
                "user": lambda s: s.user or None}  # fmt: skip
        pieces: dict[tuple[int, int], Piece] = {}  # summed per run first: fewer adds
        runs_held = {span.run_id: span for span in held}
        for a, b, active in _segments(held, query.since, end):
            hour = a.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
            utilization, simulated, recorded = hourly.get((pid, hour), (None, False, None))
            room, length = quota if recorded is None else recorded, micros(a, b)
            period = bisect_right(starts, a) - 1
            for span in active:
                over = min(span.milli, max(span.milli - room, 0))
                room -= span.milli
                piece = pieces.get((period, span.run_id))
                if piece is None:
                    piece = pieces[(period, span.run_id)] = Piece()
                piece.add(span.milli * length, over * length, utilization, simulated)
                piece.cpu += span.cpu_millis * length
                piece.memory += span.memory_bytes * length
        for (period, run), piece in pieces.items():
            report.add(period, keys[query.group_by](runs_held[run]), piece, run)
    return report


def _segments(held: list[Span], since: datetime, end: datetime):
    """(a, b, active spans in quota order) for each stretch of [since, end) during which no run
    starts or ends and no hour (nor period: they start on hours) begins."""
    first = max(since, min(s.start for s in held))
    last = min(end, max(s.end for s in held))
    points = {first, last}
    hour = first.astimezone(UTC).replace(minute=0, second=0, microsecond=0) + HOUR
    while hour < last:
        points.add(hour)
        hour += HOUR
    points.update(moment_ for s in held for moment_ in (s.start, s.end) if first < moment_ < last)
    points.update(_period_points(first, last))
    order = sorted(held, key=lambda s: s.start)
    active: list[Span] = []
    j = 0
    for a, b in pairwise(sorted(points)):
        while j < len(order) and order[j].start <= a:
            active.append(order[j])
            j += 1
        active = [s for s in active if s.end > a]
        if active:
            yield a, b, sorted(active, key=lambda s: (not s.interactive, s.start, s.run_id))


def _period_points(first: datetime, last: datetime) -> set[datetime]:
    """Midnights inside (first, last): in a time zone whose offset is not whole hours they are
    not on UTC hours."""
    out, day = set(), _start_of(first, "day")
    while _midnight(day) < last:
        if _midnight(day) > first:
            out.add(_midnight(day))
        day += timedelta(days=1)
    return out


def _hourly(pids: list[int], since: datetime, end: datetime) -> dict:
    """{(project id, UTC hour): (utilization or None, simulated, quota in milli-GPUs)} from the
    hourly rollups of the cycle's usage samples."""
    start = since.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    rows = UsageRollup.objects.filter(
        resolution_s=3600, project_id__in=pids, bucket__gte=start, bucket__lt=end, samples__gt=0
    ).values_list("project_id", "bucket", "quota_sum", "samples", "utilization_sum",
                  "utilization_samples", "simulated")  # fmt: skip
    return {
        (pid, bucket): (u_sum / u_n if u_n else None, simulated, milli_gpus(q_sum / n))
        for pid, bucket, q_sum, n, u_sum, u_n, simulated in rows
    }
