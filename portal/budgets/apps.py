from django.apps import AppConfig


class BudgetsConfig(AppConfig):
    """GPU-hour (and core-hour) budgets per project, department or user within a project, over a
    month, a term or a rolling window (issue 36; rules R20 in docs/budgets.md)."""

    name = "portal.budgets"
    label = "budgets"
