"""Budgets' writes (create, change, delete, announce) and their verdicts on jobs.

The REST API and the pages write through these verbs; who may write is asked of `portal.access`
by the caller, what is valid is checked by the API's serializer (which the pages reuse).
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction

from portal.audit import services as audit
from portal.budgets.models import Budget, BudgetNotice, Kind, Over, Window
from portal.budgets.usage import BudgetState, enforced
from portal.jobs.models import JobEvent
from scheduler import Job, Project
from scheduler.budgets import SpentBudget
from scheduler.budgets import with_verdicts as core_verdicts

FIELDS = ("name", "project", "department", "user", "gpu_hours", "core_hours", "window",
          "term_start", "term_end", "rolling_days", "kind", "over", "thresholds")  # fmt: skip


def create_budget(**fields) -> Budget:
    """A new budget; `fields` were validated by the serializer."""
    budget = Budget.objects.create(**fields)
    after = audit.snapshot(budget, FIELDS)
    audit.record("budget.created", budget, changes={k: [None, v] for k, v in after.items()})
    return budget


def update_budget(budget: Budget, **fields) -> Budget:
    """Change a budget's fields (those given); what it used is counted anew from the runs."""
    before = audit.snapshot(budget, fields)
    for key, value in fields.items():
        setattr(budget, key, value)
    budget.save()
    audit.record_changes(budget, before, {"budget.changed": None})
    return budget


def delete_budget(budget: Budget) -> None:
    """Remove a budget (its notices go with it); the runs it counted stay."""
    audit.record("budget.deleted", budget, changes={"name": [budget.name, None]})
    budget.delete()


# ------------------------------------------------------------------ verdicts on jobs (R20.2-4)
def with_verdicts(
    jobs: tuple[Job, ...], projects: tuple[Project, ...], states: list[BudgetState]
) -> tuple[Job, ...]:
    """The jobs with the verdicts of the spent hard budgets among `states` (R20.2-R20.4: the
    core's `scheduler.budgets.with_verdicts`, which the scenario replay uses too)."""
    spent = [SpentBudget(reason=state.reason(), over=state.over, project=state.project,
                         department=state.department, user=state.user)
             for state in enforced(states)]  # fmt: skip
    return core_verdicts(jobs, projects, spent) if spent else jobs


# ------------------------------------------------------------------ thresholds (R20.5)
def announce(states: list[BudgetState], now: datetime) -> list[int]:
    """Record a notice and a project event for each threshold newly reached in its window, once
    per window (a rolling window's notice is dropped when its use falls below it again, so a new
    crossing is announced); returns the events' ids for `portal.notify.dispatch.after_commit`."""
    events = []
    for state in states:
        if state.start is None:
            continue
        key = _window_key(state)
        if state.window == Window.ROLLING:
            BudgetNotice.objects.filter(budget_id=state.id).exclude(
                threshold__in=state.reached
            ).delete()
        known = set(BudgetNotice.objects.filter(budget_id=state.id, window_start=key)
                    .values_list("threshold", flat=True))  # fmt: skip
        for threshold in state.reached:
            if threshold not in known:
                event = _notice(state, key, threshold, now)
                if event is not None:
                    events.append(event)
    return events


def _window_key(state: BudgetState) -> datetime:
    """Month and term windows are told apart by their start; a rolling one has only one."""
    if state.window == Window.ROLLING:
        return datetime(2000, 1, 1, tzinfo=state.start.tzinfo)
    return state.start


def _notice(state: BudgetState, key: datetime, threshold: int, now: datetime) -> int | None:
    """One notice and its event (savepoint: a concurrent cycle that got there first wins)."""
    budget = Budget.objects.select_related("project", "department").get(id=state.id)
    project = budget.project or budget.department.projects.order_by("id").first()
    if project is None:
        return None
    enforced_now = state.kind == Kind.HARD and threshold >= 100
    text = (
        f"{state.scope}'s budget {state.name!r} reached {threshold} % "
        f"({state.used_gpu_hours:.2f} of {state.gpu_hours or 0:.2f} GPU-hours per "
        f"{state.window_text()})"
        + (f"; new jobs now {_over_text(state.over)} (R20.5)" if enforced_now else " (R20.5)")
    )
    try:
        with transaction.atomic():
            event = JobEvent.objects.create(time=now, project=project, job_name="",
                                            kind="budget", message=text)  # fmt: skip
            BudgetNotice.objects.create(budget=budget, window_start=key, threshold=threshold,
                                        event=event, sent_at=now)  # fmt: skip
    except IntegrityError:
        return None
    return event.id


def _over_text(over: str) -> str:
    return "wait" if over == Over.WAIT else "run only as preemptible over-quota work"
