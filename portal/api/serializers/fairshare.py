"""What fair share over time (R2.9, E10; issue 23) did to a project's fair share, in the project's
API answer (`portal.scheduling.fairshare.explain`)."""

from __future__ import annotations

from rest_framework import serializers

from portal.api.serializers.tenancy import ProjectSerializer


class FairShareOverTimeSerializer(serializers.Serializer):
    """A project's usage over the window and its fair share with and without it."""

    enabled = serializers.BooleanField(
        read_only=True, help_text="False when ALLOT_FAIRSHARE_HALF_LIFE is 0: usage counts nowhere"
    )
    half_life_hours = serializers.FloatField(read_only=True)
    window_days = serializers.FloatField(read_only=True)
    k_value = serializers.FloatField(read_only=True, help_text="R2.9's k (KAI's kValue)")
    gpu_hours = serializers.FloatField(
        read_only=True, help_text="GPU-hours the project's runs held inside the window"
    )
    decayed_gpu_hours = serializers.FloatField(
        read_only=True, help_text="the same, each hour weighted 0.5 ** (age / half-life)"
    )
    usage = serializers.FloatField(
        read_only=True,
        help_text="decayed GPU-hours over what the cluster could have given in the window (0..1)",
    )
    fair_share = serializers.FloatField(
        read_only=True, help_text="GPUs, with everyone's usage counted (what the scheduler uses)"
    )
    fair_share_without_usage = serializers.FloatField(
        read_only=True, help_text="GPUs, had nobody's past usage counted"
    )
    summary = serializers.CharField(read_only=True, help_text="the figures in words")


class ProjectWithUsageSerializer(ProjectSerializer):
    """A project as GET /api/v1/projects/{name}/ answers it: with `fair_share_over_time`."""

    fair_share_over_time = FairShareOverTimeSerializer(read_only=True)

    class Meta(ProjectSerializer.Meta):
        fields = [*ProjectSerializer.Meta.fields, "fair_share_over_time"]
