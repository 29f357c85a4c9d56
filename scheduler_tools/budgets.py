"""Budgets in scenario replays (issue 36, R20 in docs/budgets.md): the scenario clock's runs
counted per budget, thresholds announced, spent hard budgets turned into the core's verdicts.

A scenario's `budgets` are terms on the scenario clock: `from` (default 0) to `until` (default
never), GPU-hours over that window. While the clock moves from one step's `at` to the next,
every running job adds its GPUs x the time inside each covering budget's window (what the
portal counts from its runs). Verdicts are the core's own (`scheduler.budgets.with_verdicts`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from scheduler.budgets import SpentBudget, reached, with_verdicts
from scheduler.model import Snapshot

KINDS = ("soft", "hard")
OVERS = ("wait", "preemptible")


@dataclass(frozen=True)
class ScenarioBudget:
    """One budget of a scenario file."""

    name: str
    gpu_hours: float
    kind: str = "soft"
    over: str = "wait"
    project: str | None = None
    department: str | None = None
    user: str | None = None
    start: float = 0.0
    until: float = math.inf
    thresholds: tuple[int, ...] = (80, 100)

    @property
    def scope(self) -> str:
        """'project team-a', 'department physics' or 'ada in project team-a'."""
        if self.department is not None:
            return f"department {self.department}"
        if self.user is not None:
            return f"{self.user} in project {self.project}"
        return f"project {self.project}"

    def scoped(self, reason: str = "") -> SpentBudget:
        """The budget's scope as the core's SpentBudget, carrying `reason`."""
        return SpentBudget(reason, self.over, self.project, self.department, self.user)

    def open_at(self, now: float) -> bool:
        """True while the clock is inside the budget's term."""
        return self.start <= now < self.until


@dataclass
class Meter:
    """GPU-seconds each budget counted so far, and the thresholds announced, in order."""

    budgets: tuple[ScenarioBudget, ...]
    used_s: dict[str, float] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)

    def advance(self, snapshot: Snapshot, until: float) -> None:
        """Count the running jobs' GPUs from the snapshot's clock to `until` (R20.1), then
        announce the thresholds newly reached (R20.5)."""
        t0 = snapshot.now
        department = {p.name: p.department for p in snapshot.projects}
        for budget in self.budgets:
            overlap = max(0.0, min(until, budget.until) - max(t0, budget.start))
            scope = budget.scoped()
            for job in snapshot.jobs:
                if job.running and scope.covers(job, department.get(job.project)):
                    held = job.milli_total / 1000 * overlap
                    self.used_s[budget.name] = self.used_s.get(budget.name, 0.0) + held
            for threshold in reached(budget.thresholds, self.used_hours(budget), budget.gpu_hours):
                notice = f"{budget.name} {threshold}%"
                if notice not in self.notices:
                    self.notices.append(notice)

    def used_hours(self, budget: ScenarioBudget) -> float:
        """GPU-hours the budget counted so far."""
        return self.used_s.get(budget.name, 0.0) / 3600

    def apply(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot's jobs with the verdicts of the hard budgets spent now (R20.2-R20.4)."""
        if not self.budgets:
            return snapshot
        spent = [
            budget.scoped(
                f"{budget.scope}'s hard budget {budget.name!r} of {budget.gpu_hours:.2f} "
                f"GPU-hours is spent ({self.used_hours(budget):.2f} GPU-hours used)"
            )
            for budget in self.budgets
            if budget.kind == "hard"
            and budget.open_at(snapshot.now)
            and self.used_hours(budget) >= budget.gpu_hours
        ]
        jobs = with_verdicts(snapshot.jobs, snapshot.projects, spent)
        return dataclasses.replace(snapshot, jobs=jobs)

    def check(self, expect: dict, step: int) -> list[str]:
        """`budget_notices` (every threshold announced so far, in order) and `budget_used`
        (`{"name": GPU-hours}`, to 0.001)."""
        failures = []
        if "budget_notices" in expect and expect["budget_notices"] != self.notices:
            failures.append(f"step {step}: budget notices {self.notices}, "
                            f"want {expect['budget_notices']}")  # fmt: skip
        by_name = {budget.name: budget for budget in self.budgets}
        for name, want in expect.get("budget_used", {}).items():
            got = self.used_hours(by_name[name]) if name in by_name else None
            if got is None or abs(got - want) > 0.001:
                failures.append(f"step {step}: budget {name} used {got} GPU-hours, want {want}")
        return failures


def parse_budgets(data, projects: set[str], departments: set[str], fail) -> tuple:
    """The scenario's `budgets`, each checked (`fail(message)` raises naming the field)."""
    if data is None:
        return ()
    if not isinstance(data, list):
        fail("'budgets' must be a list")
    out = []
    for i, b in enumerate(data):
        where = f"budgets[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("name"), str):
            fail(f"{where}: name missing")
        if (b.get("project") is None) == (b.get("department") is None):
            fail(f"{where}: give exactly one of project or department")
        if b.get("project") is not None and b["project"] not in projects:
            fail(f"{where}: unknown project {b['project']!r}")
        if b.get("department") is not None and b["department"] not in departments:
            fail(f"{where}: unknown department {b['department']!r}")
        if b.get("kind", "soft") not in KINDS or b.get("over", "wait") not in OVERS:
            fail(f"{where}: kind must be soft or hard, over wait or preemptible")
        hours = b.get("gpu_hours")
        if not isinstance(hours, int | float) or isinstance(hours, bool) or hours < 0:
            fail(f"{where}.gpu_hours: expected a number >= 0, got {hours!r}")
        out.append(ScenarioBudget(
            name=b["name"], gpu_hours=float(hours), kind=b.get("kind", "soft"),
            over=b.get("over", "wait"), project=b.get("project"),
            department=b.get("department"), user=b.get("user"),
            start=float(b.get("from", 0)), until=float(b.get("until", math.inf)),
            thresholds=tuple(int(t) for t in b.get("thresholds", (80, 100))),
        ))  # fmt: skip
    return tuple(out)
