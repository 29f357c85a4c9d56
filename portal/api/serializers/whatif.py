"""The what-if over REST (issue 37): a list of changes in, each project's expected starts
without and with them, both allocation series and the jobs stopped now out
(`portal.scheduling.whatif`). Every bad change is a 400 naming the field."""

from __future__ import annotations

from rest_framework import serializers

from portal.api.fields import StrictSerializer
from portal.cluster.models import Node
from portal.scheduling.whatif import NODE_ACTIONS, PROJECT_KINDS
from portal.tenancy.models import Project
from scheduler.whatif import NodeChange, ProjectChange

KINDS = (*PROJECT_KINDS, *NODE_ACTIONS)
MAX_HOURS = 7 * 24
MAX_CHANGES = 50


class ChangeSerializer(StrictSerializer):
    """One change: `quota`, `weight` or `limit` of a `project` (GPUs; a null weight is the quota
    itself, a null limit none), or `cordon`, `drain`, `uncordon` or `remove` of a `node`."""

    kind = serializers.ChoiceField(choices=KINDS)
    project = serializers.CharField(required=False, max_length=200)
    node = serializers.CharField(required=False, max_length=200)
    quota = serializers.FloatField(required=False, min_value=0)
    weight = serializers.FloatField(required=False, min_value=0, allow_null=True)
    limit = serializers.FloatField(required=False, min_value=0, allow_null=True)

    def validate(self, attrs):
        kind = attrs["kind"]
        if kind in PROJECT_KINDS:
            if "project" not in attrs:
                raise serializers.ValidationError({"project": [f"a {kind} change names one"]})
            if kind not in attrs:
                raise serializers.ValidationError({kind: [f"a {kind} change gives the new value"]})
        elif "node" not in attrs:
            raise serializers.ValidationError({"node": [f"a {kind} change names one"]})
        extra = {"project", "node", *PROJECT_KINDS} & set(attrs) - {kind, "project"}
        if kind in NODE_ACTIONS:
            extra = {"project", *PROJECT_KINDS} & set(attrs)
        if extra:
            name = sorted(extra)[0]
            raise serializers.ValidationError({name: [f"a {kind} change takes no {name}"]})
        if kind in PROJECT_KINDS and not Project.objects.filter(name=attrs["project"]).exists():
            raise serializers.ValidationError({"project": [f"no project named {attrs['project']}"]})
        if kind in NODE_ACTIONS and not Node.objects.filter(name=attrs["node"]).exists():
            raise serializers.ValidationError({"node": [f"no node named {attrs['node']}"]})
        return attrs


def change_of(data: dict):
    """The scheduler's change (`scheduler.whatif`) for one validated change."""
    kind = data["kind"]
    if kind in PROJECT_KINDS:
        return ProjectChange(data["project"], {PROJECT_KINDS[kind]: data[kind]})
    return NodeChange(data["node"], kind)


class WhatIfRequestSerializer(StrictSerializer):
    """The changes, applied in order, and how many hours ahead to run (1 to a week)."""

    changes = ChangeSerializer(many=True, allow_empty=False, max_length=MAX_CHANGES)
    hours = serializers.FloatField(required=False, default=6, min_value=1, max_value=MAX_HOURS)

    def changes_made(self) -> list:
        return [change_of(data) for data in self.validated_data["changes"]]


class StartsSerializer(serializers.Serializer):
    """A project's pending work in one run (with the changes: its stopped jobs too)."""

    first = serializers.DateTimeField(allow_null=True, help_text="earliest expected start")
    last = serializers.DateTimeField(
        allow_null=True, help_text="when all its pending work has started (null: not in view)"
    )
    unknown = serializers.IntegerField(help_text="pending jobs not started within the hours")


class ProjectStartsSerializer(serializers.Serializer):
    project = serializers.CharField()
    pending = serializers.IntegerField(help_text="its jobs waiting now")
    stopped = serializers.IntegerField(help_text="its running jobs the changes stop now")
    before = StartsSerializer()
    after = StartsSerializer()


class PointSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    gpus = serializers.DictField(child=serializers.FloatField(), help_text="GPUs per project")


class SeriesSerializer(serializers.Serializer):
    before = PointSerializer(many=True)
    after = PointSerializer(many=True)


class PreemptedSerializer(serializers.Serializer):
    id = serializers.IntegerField(allow_null=True)
    project = serializers.CharField()
    job = serializers.CharField()
    reason = serializers.CharField()


class WhatIfSerializer(serializers.Serializer):
    """The answer (read only)."""

    now = serializers.DateTimeField()
    projects = ProjectStartsSerializer(many=True)
    series = SeriesSerializer()
    preempted = PreemptedSerializer(many=True)
