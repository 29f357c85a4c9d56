"""The node resource of the REST API, with each device's use."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from rest_framework import serializers

from portal.api.fields import StrictModelSerializer
from portal.api.serializers.jobs import _no_django_validation_error
from portal.api.serializers.quantities import MibField, QuantityField
from portal.cluster import topology
from portal.cluster.models import MAX_GPUS_PER_NODE, Node, PoolTopology
from portal.core.validators import validate_dns_label, validate_dns_subdomain
from portal.jobs.models import HOLDING, Job
from scheduler.quantity import MIB, mib_ceil


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
    """Each device of `node`: its index, the share allocated, the visible jobs on it and
    whether it is marked failed (issue 26)."""
    on_node, failed = use.get(node.name, {}), set(node.out_of_service)
    return [
        {
            "index": index,
            "allocated": round(sum(share for _, share in on_node.get(index, [])), 3),
            "jobs": [str(job) for job, _ in on_node.get(index, []) if visible(job)],
            "failed": index in failed,
        }
        for index in range(node.gpus)
    ]


def node_requests(jobs: Iterable[Job] | None = None) -> dict[str, tuple[int, int]]:
    """node name -> (millicores, bytes) the pods placed there request (issue 26)."""
    if jobs is None:
        jobs = Job.objects.filter(status__in=HOLDING)
    held: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for job in jobs:
        for pod in job.placed_pods:
            held[pod.node][0] += job.cpu_millis
            held[pod.node][1] += job.memory_bytes
    return {name: (cpu, memory) for name, (cpu, memory) in held.items()}


class DeviceMemoryField(serializers.IntegerField):
    """A GPU's memory in MiB in the API (the unit devices report), in bytes in the database."""

    def run_validation(self, data=serializers.empty) -> int:
        return super().run_validation(data) * MIB  # checked against its bounds in MiB

    def to_representation(self, value) -> int:
        return value // MIB


class NodeSerializer(StrictModelSerializer):
    """A node; `devices` and `allocated_gpus` are read-only and come from the jobs' placements."""

    create_only = ("name",)  # a PATCH refuses another; not in its schema (portal/api/schema.py)

    name = serializers.CharField(
        max_length=253, validators=[_no_django_validation_error(validate_dns_subdomain)]
    )
    gpus = serializers.IntegerField(min_value=0, max_value=MAX_GPUS_PER_NODE)
    gpu_memory_mib = DeviceMemoryField(
        source="gpu_memory_bytes", min_value=1, max_value=10_485_760, required=False,
        help_text="memory of each GPU in MiB, as nvidia-smi and GPU feature discovery say it "
        "(default 32768)",
    )  # fmt: skip
    pool = serializers.CharField(
        max_length=63,
        default="default",
        validators=[_no_django_validation_error(validate_dns_label)],
    )
    cpu = QuantityField(
        "cpu",
        source="cpu_millis",
        help_text="allocatable CPU, e.g. 64 or 63500m (null: not tracked)",
    )
    memory = QuantityField(
        "memory",
        source="memory_bytes",
        help_text="allocatable memory, e.g. 512Gi (null: not tracked)",
    )
    failed_devices = serializers.ListField(
        child=serializers.IntegerField(min_value=0, max_value=MAX_GPUS_PER_NODE - 1),
        max_length=MAX_GPUS_PER_NODE, required=False,
        help_text="indexes of GPUs out of service, each below gpus: nothing is placed on them "
        "and the jobs on them are moved or stopped by the next cycle",
    )  # fmt: skip
    labels = serializers.DictField(
        child=serializers.CharField(allow_blank=True, max_length=63, trim_whitespace=False),
        required=False,
        help_text='the node\'s labels, e.g. {"example.com/rack": "r1"}: its pool\'s topology '
        "levels group nodes by them (issue 38); the Kubernetes agent copies a real node's",
    )
    allocated_gpus = serializers.SerializerMethodField()
    allocated_cpu_millis = serializers.SerializerMethodField()
    allocated_memory_mib = serializers.SerializerMethodField()
    memory_mib = MibField(source="memory_bytes", floor=True)
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
            "cpu",
            "cpu_millis",
            "memory",
            "memory_mib",
            "failed_devices",
            "failed_in_cluster",
            "labels",
            "allocated_gpus",
            "allocated_cpu_millis",
            "allocated_memory_mib",
            "devices",
            "created_at",
        ]
        read_only_fields = ["created_at", "cpu_millis", "failed_in_cluster"]

    def _devices(self, node: Node) -> list[dict]:
        use = self.context.get("device_use")
        if use is None:
            use = self.context["device_use"] = device_use()
        return devices_of(node, use, self.context.get("visible", lambda job: True))

    def get_devices(self, node: Node) -> list[dict]:
        return self._devices(node)

    def get_allocated_gpus(self, node: Node) -> float:
        return round(sum(device["allocated"] for device in self._devices(node)), 3)

    def get_allocated_cpu_millis(self, node: Node) -> int:
        return self._requests().get(node.name, (0, 0))[0]

    def get_allocated_memory_mib(self, node: Node) -> int:
        return mib_ceil(self._requests().get(node.name, (0, 0))[1])

    def _requests(self) -> dict[str, tuple[int, int]]:
        use = self.context.get("node_requests")
        if use is None:
            use = self.context["node_requests"] = node_requests()
        return use

    def validate_labels(self, labels: dict) -> dict:
        for key, value in labels.items():
            problem = topology.key_problem(key) or topology.value_problem(value)
            if problem:
                raise serializers.ValidationError(problem)
        return labels

    def validate_failed_devices(self, devices: list[int]) -> list[int]:
        return sorted(set(devices))

    def validate(self, attrs: dict) -> dict:
        gpus = attrs.get("gpus", getattr(self.instance, "gpus", 0))
        failed = attrs.get("failed_devices", getattr(self.instance, "failed_devices", []))
        beyond = [index for index in failed if index >= gpus]
        if beyond:
            raise serializers.ValidationError({"failed_devices": [
                f"device {beyond[0]} does not exist: the node has {gpus} GPUs (0 to {gpus - 1})"
            ]})  # fmt: skip
        return attrs

    def validate_name(self, name: str) -> str:
        if self.instance is not None and name != self.instance.name:
            raise serializers.ValidationError("a node's name cannot be changed")
        return name


class PoolTopologySerializer(StrictModelSerializer):
    """A node pool's topology levels, widest first (issue 38, R23.1)."""

    create_only = ("pool",)

    pool = serializers.CharField(
        max_length=63, validators=[_no_django_validation_error(validate_dns_label)]
    )
    levels = serializers.ListField(
        child=serializers.CharField(max_length=317),
        min_length=1,
        max_length=topology.MAX_LEVELS,
        help_text='node label keys, widest domain first, e.g. ["example.com/block", '
        '"example.com/rack", "kubernetes.io/hostname"]; a job names one by key or by '
        "the part after the last '/'",
    )

    default_required = serializers.CharField(
        max_length=317, allow_blank=True, allow_null=True, required=False,
        help_text="the level a gang that may only run in this pool must fit in when neither "
        "its submission nor its project names a topology (issue 38); '' or null: none",
    )  # fmt: skip
    default_preferred = serializers.CharField(
        max_length=317, allow_blank=True, allow_null=True, required=False,
        help_text="the level such a gang is packed into; '' or null: none",
    )  # fmt: skip

    class Meta:
        model = PoolTopology
        fields = ["pool", "levels", "default_required", "default_preferred", "updated_at"]
        read_only_fields = ["updated_at"]
        validators = []  # a pool's row is replaced by PUT, not refused as a duplicate

    def validate_levels(self, levels: list[str]) -> list[str]:
        for key in levels:
            problem = topology.key_problem(key)
            if problem:
                raise serializers.ValidationError(problem)
        twice = sorted({key for key in levels if levels.count(key) > 1})
        if twice:
            raise serializers.ValidationError(f"{twice[0]!r} is listed twice")
        shorts = [topology.short(key) for key in levels]
        clash = sorted({name for name in shorts if shorts.count(name) > 1})
        if clash:
            raise serializers.ValidationError(
                f"two levels have the short name {clash[0]!r}: a job could not tell them apart"
            )
        return levels

    def validate(self, attrs: dict) -> dict:
        """Each default is one of the pool's levels (by key or short name), or none."""
        levels = attrs.get("levels", getattr(self.instance, "levels", []))
        names = {name for key in levels for name in (key, topology.short(key))}
        for field in ("default_required", "default_preferred"):
            level = (attrs.get(field, getattr(self.instance, field, "")) or "").strip()
            if level and level not in names:
                raise serializers.ValidationError({field: [
                    f"{level!r} is not a level of this pool (levels: {', '.join(levels)})"
                ]})  # fmt: skip
            attrs[field] = level
        return attrs
