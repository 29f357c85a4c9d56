"""Budgets in the core (Allot's R20 rules, docs/budgets.md): what a spent hard budget does.

The portal measures every budget from the runs and hands the core its verdict per job as plain
data (`Job.budget_hold`, `Job.over_budget`); the core never counts GPU-hours itself. Rules:

- R20.1: a budget counts its scope's runs inside a window (`window_of`); R20.5: thresholds
  (`reached`) notify once per window; R20.6: a forecast (`runs_out`).
- R20.2: a pending job whose `budget_hold` is set waits with that reason; no action places it,
  and nothing is evicted or moved for it.
- R20.3: a pending job whose `over_budget` is set starts only on idle capacity (allocate); it is
  not the beneficiary of consolidation, reclaim or preemption. Interactive jobs are never
  preemptible (R7.2), so an interactive job past such a budget waits instead.
- R20.4: a running job whose `over_budget` is set is over-quota preemptible work: any pending
  job within its budgets may evict it, newest first, whatever the fair shares
  (scheduler/actions/budget.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta

from .model import Job, JobKey, Project


def budget_block(job: Job) -> str | None:
    """Why a spent budget keeps the job from being placed now (R20.2, R20.3), or None."""
    if job.budget_hold:
        return f"{job.budget_hold} (R20.2)"
    if job.over_budget and not job.preemptible:
        return (
            f"{job.over_budget}; an interactive job cannot run as preemptible over-quota work "
            "(R20.3)"
        )
    return None


@dataclass(frozen=True)
class SpentBudget:
    """A spent hard budget as its producer tells the core: its scope (a project, a department,
    or a `user` within a project), what it does (`over`: "wait" or "preemptible") and the words
    its jobs carry (`reason`)."""

    reason: str
    over: str = "wait"
    project: str | None = None
    department: str | None = None
    user: str | None = None

    def covers(self, job: Job, department: str | None) -> bool:
        """True when the job is in the budget's scope."""
        if self.department is not None:
            return self.department == department
        return self.project == job.project and (self.user is None or self.user == job.user)


def with_verdicts(
    jobs: Iterable[Job], projects: Iterable[Project], spent: list[SpentBudget]
) -> tuple[Job, ...]:
    """The jobs with their budget verdicts set afresh: `budget_hold` on a pending job under a
    spent budget that says wait (R20.2), else `over_budget` on any job under one that lets its
    work run preemptible (R20.3, R20.4); running jobs under a wait budget carry on."""
    department = {project.name: project.department for project in projects}
    out = []
    for job in jobs:
        mine = [s for s in spent if s.covers(job, department.get(job.project))]
        hold = next((s.reason for s in mine if s.over == "wait"), None)
        over = next((s.reason for s in mine if s.over == "preemptible"), None)
        hold = hold if not job.running else None
        over = over if hold is None else None
        if (hold, over) != (job.budget_hold, job.over_budget):
            job = replace(job, budget_hold=hold, over_budget=over)
        out.append(job)
    return tuple(out)


def over_budget_keys(jobs: list[Job]) -> set[JobKey]:
    """The jobs that run, or would run, only as preemptible over-quota work (R20.3)."""
    return {job.key for job in jobs if job.over_budget}


# ---------------------------------------------------------------- windows and thresholds (R20.1)
WINDOWS = ("month", "term", "rolling")
FORECAST_RATE_WINDOW = timedelta(days=1)
"""The burn rate of a forecast (R20.6) is the use of the last day, or of the window so far
when it began less than a day ago."""


def window_of(
    kind: str,
    now: datetime,
    *,
    term_start: date | None = None,
    term_end: date | None = None,
    days: int | None = None,
) -> tuple[datetime, datetime] | None:
    """The window a budget counts at `now` (aware; its zone is the portal's), or None when no
    window is open (R20.1): a calendar month from its first midnight to the next month's; a term
    from its start date's midnight to the midnight after its end date (None before and after:
    a term budget holds nothing once its term has ended); the rolling last `days` days."""
    zone = now.tzinfo
    if kind == "month":
        first = date(now.year, now.month, 1)
        following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        return _midnight(first, zone), _midnight(following, zone)
    if kind == "term":
        if term_start is None or term_end is None:
            raise ValueError("a term window needs its start and end dates")
        start, end = _midnight(term_start, zone), _midnight(term_end + timedelta(days=1), zone)
        return (start, end) if start <= now < end else None
    if kind == "rolling":
        if not days or days < 1:
            raise ValueError("a rolling window needs a number of days of at least 1")
        return now - timedelta(days=days), now
    raise ValueError(f"{kind!r} is not one of {', '.join(WINDOWS)}")


def _midnight(day: date, zone) -> datetime:
    return datetime.combine(day, time.min, tzinfo=zone)


def reached(thresholds: tuple[int, ...], used: float, limit: float) -> tuple[int, ...]:
    """The thresholds (percent of `limit`) that `used` has reached (R20.5)."""
    if limit <= 0:
        return tuple(sorted(thresholds))
    return tuple(t for t in sorted(thresholds) if used * 100 >= t * limit)


def runs_out(
    used: float, limit: float, rate_per_hour: float, now: datetime, end: datetime | None
) -> datetime | None:
    """When the budget is spent at `rate_per_hour` (R20.6): `now` when it already is; None when
    nothing burns or the window ends first."""
    if used >= limit:
        return now
    if rate_per_hour <= 0:
        return None
    moment = now + timedelta(hours=(limit - used) / rate_per_hour)
    return moment if end is None or moment < end else None
