"""The node resource of the REST API, with each device's use."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rest_framework import serializers

from portal.api.serializers.jobs import _no_django_validation_error
from portal.cluster.models import MAX_GPUS_PER_NODE, Node
from portal.core.validators import validate_dns_label, validate_dns_subdomain
from portal.jobs.models import HOLDING, Job


def device_use(jobs: Iterable[Job] | None = None) -> dict[str, dict[int, list[tuple[Job, float]]]]:
    """node name -> device index -> [(job, share)] for `jobs` (default: all holding GPUs)."""
    if jobs is None:
        jobs = Job.objects.filter(status__in=HOLDING).select_related("project")
    use: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for job in jobs:
        for pod in job.placed_pods:
            for device in pod.devices:
                use[pod.node][device].append((job, pod.share))
    return use


def devices_of(node: Node, use: dict, visible=lambda job: True) -> list[dict]:
    """Each device of `node`: its index, the share allocated and the visible jobs on it."""
    on_node = use.get(node.name, {})
    return [
        {
            "index": index,
            "allocated": round(sum(share for _, share in on_node.get(index, [])), 3),
            "jobs": [str(job) for job, _ in on_node.get(index, []) if visible(job)],
        }
        for index in range(node.gpus)
    ]


class NodeSerializer(serializers.ModelSerializer):
    """A node; `devices` and `allocated_gpus` are read-only and come from the jobs' placements."""

    name = serializers.CharField(
        max_length=253, validators=[_no_django_validation_error(validate_dns_subdomain)]
    )
    gpus = serializers.IntegerField(min_value=0, max_value=MAX_GPUS_PER_NODE)
    gpu_memory_mib = serializers.IntegerField(min_value=1, max_value=10_485_760, default=32768)
    pool = serializers.CharField(
        max_length=63,
        default="default",
        validators=[_no_django_validation_error(validate_dns_label)],
    )
    allocated_gpus = serializers.SerializerMethodField()
    devices = serializers.SerializerMethodField()

    class Meta:
        model = Node
        fields = [
            "name",
            "gpus",
            "gpu_memory_mib",
            "pool",
            "ready",
            "schedulable",
            "allocated_gpus",
            "devices",
            "created_at",
        ]
        read_only_fields = ["created_at"]

    def _devices(self, node: Node) -> list[dict]:
        use = self.context.get("device_use")
        if use is None:
            use = self.context["device_use"] = device_use()
        return devices_of(node, use, self.context.get("visible", lambda job: True))

    def get_devices(self, node: Node) -> list[dict]:
        return self._devices(node)

    def get_allocated_gpus(self, node: Node) -> float:
        return round(sum(device["allocated"] for device in self._devices(node)), 3)

    def validate_name(self, name: str) -> str:
        if self.instance is not None and name != self.instance.name:
            raise serializers.ValidationError("a node's name cannot be changed")
        return name
