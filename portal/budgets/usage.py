"""What each budget has used, from the runs (R20.1): the accounting's spans and arithmetic.

Usage is counted in the accounting's integer units (milli-GPU or millicore x microsecond,
`portal.jobs.usage`) over the budget's window and turned into hours once, so a budget's GPU-hours
are bit for bit the accounting page's allocated GPU-hours of the same scope and range.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet
from django.utils import timezone

from portal.budgets.models import Budget, Kind, Over
from portal.jobs.models import JobRun
from portal.jobs.usage import UNITS_PER_GPU_HOUR, micros, spans, units_between
from scheduler.budgets import FORECAST_RATE_WINDOW, reached, runs_out, window_of

UNITS_PER_CORE_HOUR = 1000 * 3600 * 1_000_000  # millicores x microseconds


@dataclass(frozen=True)
class BudgetState:
    """A budget as one cycle, page or API answer sees it at `now` (plain data)."""

    id: int
    name: str
    scope: str  # 'project team-a', 'department physics', 'ada in project team-a'
    project: str | None
    department: str | None
    user: str | None
    kind: str
    over: str
    window: str
    start: datetime | None  # None: no window open (a term not begun or ended)
    end: datetime | None
    gpu_hours: float | None
    core_hours: float | None
    used_gpu_hours: float
    used_core_hours: float
    thresholds: tuple[int, ...]
    reached: tuple[int, ...]
    runs_out_at: datetime | None
    rate_gpu_hours_per_hour: float

    @property
    def spent(self) -> bool:
        """True when a window is open and its GPU-hours or core-hours are used up."""
        if self.start is None:
            return False
        return any(
            limit is not None and used >= limit
            for limit, used in ((self.gpu_hours, self.used_gpu_hours),
                                (self.core_hours, self.used_core_hours))
        )  # fmt: skip

    @property
    def percent(self) -> float:
        """The larger share used of its GPU-hours or core-hours, in percent."""
        shares = [used * 100 / limit if limit else 100.0
                  for limit, used in ((self.gpu_hours, self.used_gpu_hours),
                                      (self.core_hours, self.used_core_hours))
                  if limit is not None]  # fmt: skip
        return max(shares, default=0.0)

    @property
    def gpu_hours_left(self) -> float | None:
        return None if self.gpu_hours is None else max(self.gpu_hours - self.used_gpu_hours, 0.0)

    def reason(self) -> str:
        """The words a held or over-budget job carries (R20.2, R20.3)."""
        amount = (f"{self.gpu_hours:.2f} GPU-hours" if self.gpu_hours is not None
                  else f"{self.core_hours:.2f} core-hours")  # fmt: skip
        return (
            f"{self.scope}'s hard budget {self.name!r} of {amount} per {self.window_text()} "
            f"is spent ({self.used_gpu_hours:.2f} GPU-hours, {self.used_core_hours:.2f} "
            "core-hours used)"
        )

    def window_text(self) -> str:
        if self.window == "term" and self.start is not None and self.end is not None:
            last = timezone.localtime(self.end - timedelta(microseconds=1)).date()
            return f"term {timezone.localtime(self.start).date()} to {last}"
        return "calendar month" if self.window == "month" else "rolling window"


def runs_of(budget: Budget) -> QuerySet[JobRun]:
    """The runs a budget counts: its project's, its department's projects', or its user's in
    its project."""
    if budget.department_id is not None:
        return JobRun.objects.filter(project__department_id=budget.department_id)
    runs = JobRun.objects.filter(project_id=budget.project_id)
    return runs.filter(user_id=budget.user_id) if budget.user_id is not None else runs


def used_units(runs: QuerySet[JobRun], t0: datetime, t1: datetime, now: datetime) -> tuple:
    """(milli-GPU-microseconds, millicore-microseconds) the runs held in [t0, t1)."""
    gpu = core = 0
    for span in spans(runs.filter(Q(gpus__gt=0) | Q(cpu_millis__gt=0)), t0, t1, now):
        gpu += units_between(span, t0, t1)
        core += span.cpu_millis * max(micros(max(span.start, t0), min(span.end, t1)), 0)
    return gpu, core


def measure(budget: Budget, now: datetime) -> BudgetState:
    """The budget's state at `now` (R20.1, R20.5, R20.6)."""
    window = window_of(budget.window, timezone.localtime(now), term_start=budget.term_start,
                       term_end=budget.term_end, days=budget.rolling_days)  # fmt: skip
    gpu_limit = None if budget.gpu_hours is None else float(budget.gpu_hours)
    core_limit = None if budget.core_hours is None else float(budget.core_hours)
    used_gpu = used_core = rate = 0.0
    start = end = None
    if window is not None:
        start, end = window
        runs = runs_of(budget)
        gpu, core = used_units(runs, start, min(end, now), now)
        used_gpu, used_core = gpu / UNITS_PER_GPU_HOUR, core / UNITS_PER_CORE_HOUR
        rate = _rate(runs, start, now)
    thresholds = tuple(int(t) for t in budget.thresholds or ())
    share = max([used_gpu / gpu_limit * 100 if gpu_limit else 0.0,
                 used_core / core_limit * 100 if core_limit else 0.0])  # fmt: skip
    hit = reached(thresholds, share, 100.0) if start is not None else ()
    out = None
    if start is not None and gpu_limit is not None:
        out = runs_out(used_gpu, gpu_limit, rate, now, end if budget.window != "rolling" else None)
    project = budget.project.name if budget.project_id else None
    return BudgetState(
        id=budget.id, name=budget.name, scope=budget.scope_text(), project=project,
        department=budget.department.name if budget.department_id else None,
        user=budget.user.get_username() if budget.user_id else None, kind=budget.kind,
        over=budget.over, window=budget.window, start=start, end=end, gpu_hours=gpu_limit,
        core_hours=core_limit, used_gpu_hours=used_gpu, used_core_hours=used_core,
        thresholds=thresholds, reached=hit, runs_out_at=out, rate_gpu_hours_per_hour=rate,
    )  # fmt: skip


def _rate(runs: QuerySet[JobRun], start: datetime, now: datetime) -> float:
    """GPU-hours per hour over the last day, or over the window so far if shorter (R20.6)."""
    since = max(start, now - FORECAST_RATE_WINDOW)
    if now <= since:
        return 0.0
    gpu, _ = used_units(runs, since, now, now)
    return gpu / UNITS_PER_GPU_HOUR / (micros(since, now) / 3_600_000_000)


def measure_all(budgets: QuerySet[Budget], now: datetime) -> list[BudgetState]:
    """Every budget of `budgets` at `now`."""
    rows = budgets.select_related("project", "department", "user")
    return [measure(budget, now) for budget in rows]


def enforced(states: list[BudgetState]) -> list[BudgetState]:
    """The hard budgets that are spent now (R20.2-R20.4)."""
    return [state for state in states if state.kind == Kind.HARD and state.spent]


__all__ = ["BudgetState", "Over", "enforced", "measure", "measure_all", "runs_of"]
