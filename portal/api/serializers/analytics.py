"""Analytics as the API answers it (read only; documents the schema of
`GET /api/v1/analytics/allocation/`, `portal.dashboards.analytics.Series.as_dict`)."""

from __future__ import annotations

from rest_framework import serializers


def _series(help_text: str) -> serializers.ListField:
    """One value per step (`times`), null where nothing was recorded."""
    return serializers.ListField(
        child=serializers.FloatField(allow_null=True), help_text=f"{help_text}; one per step"
    )


class AnalyticsClusterSerializer(serializers.Serializer):
    """The whole cluster's series: sums over every project (everyone's to see)."""

    allocated = _series("GPUs allocated")
    pending = _series("pending jobs")
    running = _series("running jobs")
    utilization = _series("GPU utilization of the allocated GPUs, 0..1, weighted by GPUs")
    cpu = _series("CPU cores requested by the running jobs' pods")
    memory = _series("memory requested by the running jobs' pods, GiB")


class AnalyticsProjectSerializer(serializers.Serializer):
    """One project's series: the mean over each step of the samples in it."""

    name = serializers.CharField()
    allocated = _series("GPUs allocated")
    quota = _series("its GPU quota")
    fair_share = _series("its fair share of GPUs")
    pending = _series("pending jobs")
    running = _series("running jobs")
    utilization = _series("GPU utilization of its allocated GPUs, 0..1")
    idle = _series("GPUs allocated to running jobs under 5 % utilization")
    cpu = _series("CPU cores requested by its running jobs' pods")
    memory = _series("memory requested by its running jobs' pods, GiB")
    idle_gpu_hours = serializers.FloatField(help_text="GPU-hours held idle over the range")


class AnalyticsSerializer(serializers.Serializer):
    """GPUs, CPU and memory allocated per project and for the cluster over a range, in steps."""

    to = serializers.DateTimeField(help_text="the range's end (exclusive)")
    step_s = serializers.IntegerField(help_text="seconds per point")
    source = serializers.CharField(
        help_text="what was read: samples, or rollup-300s / rollup-3600s (sums per bucket)"
    )
    simulated = serializers.BooleanField(read_only=True, help_text="utilization in it is synthetic")
    times = serializers.ListField(child=serializers.DateTimeField(), help_text="each step's start")
    projects = AnalyticsProjectSerializer(many=True, help_text="the projects you may see")
    cluster = AnalyticsClusterSerializer()

    def get_fields(self) -> dict:
        """`from` first: a Python keyword, so it cannot be declared as a class attribute."""
        return {"from": serializers.DateTimeField(help_text="the range's start"),
                **super().get_fields()}  # fmt: skip
