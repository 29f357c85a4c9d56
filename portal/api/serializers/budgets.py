"""Budgets over the REST API (issue 36): the budget as an admin sets it, and what it has used,
counted from the runs at the time of the request (R20.1, R20.6)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from portal.api.fields import StrictModelSerializer, StrictSlugRelatedField
from portal.budgets.models import Budget, Kind, Over, Window
from portal.budgets.usage import measure
from portal.core import clock
from portal.tenancy.models import Department, Membership, Project

MAX_THRESHOLDS = 10
READ = {"read_only": True}


class BudgetUsageSerializer(serializers.Serializer):
    """What the budget has used in its current window, and the forecast (read only)."""

    window_start = serializers.DateTimeField(
        allow_null=True, help_text="None: no window open", **READ
    )
    window_end = serializers.DateTimeField(allow_null=True, **READ)
    used_gpu_hours = serializers.FloatField(**READ)
    used_core_hours = serializers.FloatField(**READ)
    gpu_hours_left = serializers.FloatField(allow_null=True, **READ)
    percent = serializers.FloatField(help_text="the larger share used, GPU- or core-hours", **READ)
    spent = serializers.BooleanField(**READ)
    thresholds_reached = serializers.ListField(child=serializers.IntegerField(), **READ)
    burn_rate_gpu_hours_per_hour = serializers.FloatField(
        help_text="over the last day, or the window so far when shorter (R20.6)", **READ
    )
    runs_out_at = serializers.DateTimeField(
        allow_null=True, help_text="at the burn rate; None: not within the window (R20.6)", **READ
    )

    def to_representation(self, budget: Budget) -> dict:
        state = measure(budget, self.context.get("now") or clock.now())
        return super().to_representation({
            "window_start": state.start, "window_end": state.end,
            "used_gpu_hours": state.used_gpu_hours, "used_core_hours": state.used_core_hours,
            "gpu_hours_left": state.gpu_hours_left, "percent": state.percent,
            "spent": state.spent, "thresholds_reached": list(state.reached),
            "burn_rate_gpu_hours_per_hour": state.rate_gpu_hours_per_hour,
            "runs_out_at": state.runs_out_at,
        })  # fmt: skip


class BudgetNoticeSerializer(serializers.Serializer):
    """A threshold announced in a window (R20.5), read only."""

    threshold = serializers.IntegerField(read_only=True)
    window_start = serializers.DateTimeField(read_only=True)
    sent_at = serializers.DateTimeField(read_only=True)


class BudgetSerializer(StrictModelSerializer):
    """A budget of exactly one scope: a project, a department, or a user within a project."""

    project = StrictSlugRelatedField(
        slug_field="name", queryset=Project.objects.all(), required=False, allow_null=True
    )
    department = StrictSlugRelatedField(
        slug_field="name", queryset=Department.objects.all(), required=False, allow_null=True
    )
    user = StrictSlugRelatedField(
        slug_field="username", queryset=get_user_model().objects.all(), required=False,
        allow_null=True, help_text="a member of `project`: the budget is theirs in it",
    )  # fmt: skip
    window = serializers.ChoiceField(choices=Window.choices, default=Window.MONTH)
    kind = serializers.ChoiceField(choices=Kind.choices, default=Kind.SOFT)
    over = serializers.ChoiceField(
        choices=Over.choices, default=Over.WAIT, help_text="what a spent hard budget does"
    )
    thresholds = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=1000), required=False,
        max_length=MAX_THRESHOLDS, help_text="percent of the budget that notify, default [80, 100]",
    )  # fmt: skip
    usage = BudgetUsageSerializer(source="*", read_only=True)
    notices = serializers.SerializerMethodField(
        help_text="the thresholds announced, in the order they were (R20.5)"
    )

    class Meta:
        model = Budget
        fields = ["id", "name", "project", "department", "user", "gpu_hours", "core_hours",
                  "window", "term_start", "term_end", "rolling_days", "kind", "over",
                  "thresholds", "created_at", "usage", "notices"]  # fmt: skip
        read_only_fields = ["id", "created_at"]

    @extend_schema_field(BudgetNoticeSerializer(many=True))
    def get_notices(self, budget: Budget) -> list[dict]:
        rows = budget.notices.order_by("sent_at", "id")
        return BudgetNoticeSerializer(rows, many=True).data

    def validate_thresholds(self, thresholds: list[int]) -> list[int]:
        if len(set(thresholds)) != len(thresholds):
            raise serializers.ValidationError("each threshold may appear once")
        return sorted(thresholds)

    def validate(self, attrs: dict) -> dict:
        """The checks that take several fields, each error naming its field."""
        merged = {**self._current(), **attrs}
        errors: dict[str, str] = {}
        if (merged.get("project") is None) == (merged.get("department") is None):
            errors["project"] = "give exactly one of project or department"
        if merged.get("user") is not None:
            project = merged.get("project")
            if project is None:
                errors["user"] = "a user's budget needs the project it counts in"
            elif not Membership.objects.filter(user=merged["user"], project=project).exists():
                errors["user"] = f"{merged['user'].get_username()} is not a member of {project}"
        if merged.get("gpu_hours") is None and merged.get("core_hours") is None:
            errors["gpu_hours"] = "give GPU-hours, core-hours or both"
        window = merged.get("window", Window.MONTH)
        if window == Window.TERM:
            start, end = merged.get("term_start"), merged.get("term_end")
            if start is None or end is None:
                errors["term_start" if start is None else "term_end"] = "a term needs both dates"
            elif end < start:
                errors["term_end"] = "must not be before term_start"
        if window == Window.ROLLING and not merged.get("rolling_days"):
            errors["rolling_days"] = "a rolling window needs a number of days of at least 1"
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def _current(self) -> dict:
        """The stored values a PATCH leaves as they are."""
        budget = self.instance
        if budget is None:
            return {}
        names = ("project", "department", "user", "gpu_hours", "core_hours", "window",
                 "term_start", "term_end", "rolling_days")  # fmt: skip
        return {name: getattr(budget, name) for name in names}
