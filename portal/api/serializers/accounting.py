"""GPU-hour accounting as the API answers it (read only; documents the schema, issue 23)."""

from __future__ import annotations

from rest_framework import serializers

BASES = ["measured", "partly measured", "simulated", "not measured"]


class AccountingFiguresSerializer(serializers.Serializer):
    """One group's GPU-hours over a period or the whole range."""

    allocated_gpu_hours = serializers.FloatField(
        help_text="GPUs its runs held x time: the job pages' GPU-hours, cut into periods"
    )
    used_gpu_hours = serializers.FloatField(
        allow_null=True,
        help_text="allocated x the project's measured GPU utilization, hour by hour, over the "
        "hours it was measured; null: not measured",
    )
    unmeasured_gpu_hours = serializers.FloatField(
        help_text="allocated GPU-hours in hours with no utilization measured"
    )
    utilization = serializers.FloatField(
        allow_null=True, help_text="used / measured allocated GPU-hours, 0..1; null: not measured"
    )
    used_basis = serializers.ChoiceField(
        choices=BASES, help_text="how `used` is known; `simulated` is synthetic utilization"
    )
    over_quota_gpu_hours = serializers.FloatField(
        help_text="the part of the project's allocation above its quota (newest runs first)"
    )
    runs = serializers.IntegerField(help_text="runs that held GPUs in it")
    allocated_core_hours = serializers.FloatField(
        help_text="CPU cores its runs' pods requested x time, CPU-only runs included (issue 26)"
    )
    allocated_memory_gib_hours = serializers.FloatField(
        help_text="memory (GiB) its runs' pods requested x time, CPU-only runs included"
    )


class AccountingGroupSerializer(AccountingFiguresSerializer):
    """Figures of one group: the key named by `group_by` (null: no department / no user)."""

    project = serializers.CharField(required=False, allow_null=True)
    department = serializers.CharField(required=False, allow_null=True)
    user = serializers.CharField(required=False, allow_null=True)


class AccountingRowSerializer(AccountingGroupSerializer):
    period = serializers.CharField(help_text="2026-11-25 (day) or 2026-11 (month)")


class AccountingPeriodSerializer(serializers.Serializer):
    period = serializers.CharField()
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class AccountingSerializer(serializers.Serializer):
    """GPU-hours per period and group, each group's totals over the range, and the total."""

    group_by = serializers.ChoiceField(choices=["project", "department", "user"])
    period = serializers.ChoiceField(choices=["day", "month"])
    since = serializers.DateTimeField()
    until = serializers.DateTimeField()
    now = serializers.DateTimeField(help_text="running runs are counted up to this moment")
    timezone = serializers.CharField(help_text="days and months start at midnight here")
    project = serializers.CharField(allow_null=True)
    user = serializers.CharField(allow_null=True)
    periods = AccountingPeriodSerializer(many=True)
    rows = AccountingRowSerializer(many=True)
    totals = AccountingGroupSerializer(many=True)
    total = AccountingFiguresSerializer()
