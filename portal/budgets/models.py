"""A budget: how many GPU-hours (and optionally core-hours) a scope may use in a window.

The scope is a project, a department (all its projects), or one user within a project. What was
used is never stored: it is counted from the runs every time (`portal.budgets.usage`), the same
runs and arithmetic as the accounting page (one source of truth). What is stored beside a budget
is which of its thresholds were already announced in which window (`BudgetNotice`, R20.5).
"""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from portal.tenancy.models import Department, Project
from scheduler.budgets import WINDOWS

HOURS = {"max_digits": 12, "decimal_places": 2, "validators": [MinValueValidator(0)]}
DEFAULT_THRESHOLDS = [80, 100]


def default_thresholds() -> list[int]:
    return list(DEFAULT_THRESHOLDS)


class Window(models.TextChoices):
    MONTH = "month", "Calendar month"
    TERM = "term", "Term (start and end dates)"
    ROLLING = "rolling", "Rolling N days"


class Kind(models.TextChoices):
    SOFT = "soft", "Soft: notify at thresholds"
    HARD = "hard", "Hard: enforced when spent"


class Over(models.TextChoices):
    """What a hard budget does to its scope's jobs once spent (an admin's choice, R20.2-R20.4)."""

    WAIT = "wait", "New jobs wait, naming the budget"
    PREEMPTIBLE = "preemptible", "Jobs run only as preemptible over-quota work"


class Budget(models.Model):
    """One budget of one scope (exactly one of project or department; a user needs a project)."""

    name = models.CharField(max_length=63)
    project = models.ForeignKey(
        Project, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    department = models.ForeignKey(
        Department, null=True, blank=True, on_delete=models.CASCADE, related_name="budgets"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="budgets",
    )  # fmt: skip
    gpu_hours = models.DecimalField(null=True, blank=True, **HOURS)
    core_hours = models.DecimalField(null=True, blank=True, **HOURS)
    window = models.CharField(max_length=8, choices=Window.choices, default=Window.MONTH)
    term_start = models.DateField(null=True, blank=True)
    term_end = models.DateField(null=True, blank=True)
    rolling_days = models.PositiveIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=4, choices=Kind.choices, default=Kind.SOFT)
    over = models.CharField(max_length=12, choices=Over.choices, default=Over.WAIT)
    thresholds = models.JSONField(default=default_thresholds, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(project__isnull=False, department__isnull=True)
                | models.Q(project__isnull=True, department__isnull=False, user__isnull=True),
                name="budget_one_scope",
            ),
            models.CheckConstraint(
                condition=models.Q(gpu_hours__isnull=False) | models.Q(core_hours__isnull=False),
                name="budget_has_an_amount",
            ),
            models.CheckConstraint(
                condition=~models.Q(window="term")
                | models.Q(
                    term_start__isnull=False,
                    term_end__isnull=False,
                    term_end__gte=models.F("term_start"),
                ),
                name="budget_term_has_dates",
            ),
            models.CheckConstraint(
                condition=~models.Q(window="rolling") | models.Q(rolling_days__gte=1),
                name="budget_rolling_has_days",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope_text()}'s budget {self.name!r}"

    def scope_text(self) -> str:
        """'project team-a', 'department physics' or 'ada in project team-a'."""
        if self.department_id is not None:
            return f"department {self.department.name}"
        if self.user_id is not None:
            return f"{self.user.get_username()} in project {self.project.name}"
        return f"project {self.project.name}"


assert tuple(Window.values) == WINDOWS  # the core's window arithmetic knows these three


class BudgetNotice(models.Model):
    """A threshold of a budget announced in the window starting at `window_start` (R20.5): each
    is announced once per window, so a new month, term or rolling stretch announces again."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="notices")
    window_start = models.DateTimeField()
    threshold = models.PositiveIntegerField()
    event = models.OneToOneField(
        "jobs.JobEvent", null=True, blank=True, on_delete=models.SET_NULL,
        related_name="budget_notice",
    )  # fmt: skip
    sent_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "window_start", "threshold"], name="budgetnotice_once"
            )
        ]
