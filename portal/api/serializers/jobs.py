"""The job resource of the REST API: what a submission may say and what a job shows."""

from __future__ import annotations

import copy
import functools
import math
import re
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.db.models import Max, Min, Sum
from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.fields import SkipField

from agents import rendezvous
from agents.sessions import STEERING_PREFIX
from portal import access
from portal.api.fields import StrictBooleanField, StrictModelSerializer, StrictSerializer
from portal.api.serializers.quantities import GpuMemoryField, MibField, QuantityField
from portal.cluster.models import Node
from portal.cluster.topology import default_for, known_levels, landing, pool_defaults
from portal.core.validators import NAME_MAX, validate_dns_label, validate_mount_path
from portal.jobs import resources
from portal.jobs.models import Job, JobEvent, JobRun, JobType, ServiceType
from portal.scheduling.agent import job_urls
from portal.scheduling.snapshot import load_departments, load_projects
from portal.tenancy.models import Project
from scheduler import Job as QueuedJob
from scheduler import Snapshot
from scheduler.eta import cannot_start
from scheduler.quantity import cores_text, memory_text

ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
IMAGE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$")
CENT = Decimal("0.01")
# Train jobs stay below the build class (100) whatever their priority, so they stay preemptible.
PRIORITY_MIN, PRIORITY_MAX = -50, 49
ESTIMATE_MAX_S = 365 * 24 * 3600  # a run-time estimate of at most a year
ZERO_GPUS = "must be greater than 0, or 0 for a CPU-only job that asks for cpu or memory"
# Requests and limits per pod (issue 26): the write-only quantity fields, the model's columns
RESOURCES = {"cpu": "cpu_millis", "memory": "memory_bytes", "cpu_limit": "cpu_limit_millis",
             "memory_limit": "memory_limit_bytes", "gpu_memory": "gpu_memory_bytes"}  # fmt: skip
# The numbers answered beside the quantities, as before issue 33 (memory in MiB, rounded up)
NUMBERS = ["cpu_millis", "memory_mib", "cpu_limit_millis", "memory_limit_mib", "gpu_memory_mib"]
# Job fields whose stored value is already what DRF's field would show (str, int, bool, None,
# and lists and maps of those); the rest (times, GPUs, volumes, computed fields) go through DRF.
STORED_AS_SHOWN = frozenset({
    "name", "type", "pods", "priority", "image", "command", "args", "environment", "ports",
    "secret_environment",
    "service_type", "sim_duration_s", "estimate_s", "status", "placement", "pending_reason",
    "stuck", "expected_s", "expected_basis", "eta_kind", "expected_start", "cpu_millis",
    "cpu_limit_millis",
})  # fmt: skip


def _no_django_validation_error(validator):
    """Wrap a Django validator so DRF reports its message under the field."""

    def run(value):
        from django.core.exceptions import ValidationError

        try:
            validator(value)
        except ValidationError as exc:
            raise serializers.ValidationError(exc.messages) from None

    run.__wrapped__ = validator  # the schema's pattern for it (portal/api/schema.py)
    return run


dns_label = _no_django_validation_error(validate_dns_label)
mount_path = _no_django_validation_error(validate_mount_path)


class EnvironmentField(serializers.DictField):
    """A job's environment variables: names as a shell takes them (`key_pattern`, said in the
    request schema as `propertyNames`), values any text."""

    key_pattern = ENV_NAME.pattern


@extend_schema_field(
    {
        "anyOf": [
            {"type": "number", "minimum": 0, "maximum": 0.99, "multipleOf": 0.01},
            {"type": "integer", "minimum": 1},
        ]
    }
)
class GpusField(serializers.Field):
    """GPUs per pod: a JSON number, 0 < g < 1 in steps of 0.01, or a whole number >= 1; 0 for a
    CPU-only job (issue 26: the serializer checks it asks for CPU or memory).

    The upper bound (the largest node) needs the database and is checked by the serializer.
    """

    default_error_messages = {
        "type": "must be a number, not {kind}",
        "positive": ZERO_GPUS,
        "step": "a fraction of a GPU must be a multiple of 0.01 (0.01 to 0.99)",
        "whole": "1 GPU or more must be a whole number of devices (R5.3)",
        "finite": "must be a finite number",
    }

    def to_internal_value(self, data) -> Decimal:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("type", kind=type(data).__name__ if data is not None else "null")
        if isinstance(data, float) and not math.isfinite(data):
            self.fail("finite")
        if data < 0:
            self.fail("positive")
        if data == 0:
            return Decimal(0)
        if data < 1:
            try:
                value = Decimal(repr(data))
            except InvalidOperation:
                self.fail("step")
            if value != value.quantize(CENT):
                self.fail("step")
            return value
        if data != math.floor(data):
            self.fail("whole")
        return Decimal(int(data))

    def to_representation(self, value) -> float | int:
        number = float(value)
        return int(number) if number.is_integer() else number


class VolumeSerializer(StrictSerializer):
    """An existing PersistentVolumeClaim mounted into every pod."""

    pvc = serializers.CharField(max_length=253, validators=[dns_label])
    mount_path = serializers.CharField(
        max_length=1024, trim_whitespace=False, validators=[mount_path]
    )
    read_only = StrictBooleanField(default=False)


class JobSerializer(StrictModelSerializer):
    """A job as submitted (writable fields) and as it stands (read-only fields)."""

    # exactly one of each pair (portal/api/schema.py says so in the request bodies' schema)
    exactly_one = (("gpus", "gpu_memory"),)

    project = serializers.CharField(max_length=NAME_MAX)
    name = serializers.CharField(max_length=NAME_MAX, validators=[dns_label])
    user = serializers.SerializerMethodField()
    type = serializers.ChoiceField(choices=JobType.choices, default=JobType.TRAIN)
    gpus = GpusField(
        required=False,
        help_text="GPUs per pod; required unless gpu_memory is given (never both); 0 only for a "
        "CPU-only job, which asks for cpu or memory (here or by its project's defaults)",
    )
    pods = serializers.IntegerField(min_value=1, max_value=1024, default=1)
    cpu = QuantityField(
        "cpu",
        source="cpu_millis",
        help_text="CPU per pod, e.g. 2 or 500m (default: the project's, else the cluster's)",
    )
    memory = QuantityField(
        "memory", source="memory_bytes", help_text="memory per pod, e.g. 16Gi, 50M or 2000 (bytes)"
    )
    memory_mib = MibField(source="memory_bytes")
    memory_limit_mib = MibField(source="memory_limit_bytes")
    gpu_memory_mib = MibField(source="gpu_memory_bytes")
    cpu_limit = QuantityField(
        "cpu", source="cpu_limit_millis", help_text="CPU limit per pod, at least cpu"
    )
    memory_limit = QuantityField(
        "memory", source="memory_limit_bytes", help_text="memory limit per pod, at least memory"
    )
    gpu_memory = GpuMemoryField(
        source="gpu_memory_bytes",
        required=False,
        help_text="a fraction of one GPU by its memory, e.g. 20Gi, instead of gpus (not with "
        "it); more than 0 (R5.5)",
    )
    priority = serializers.IntegerField(
        min_value=PRIORITY_MIN, max_value=PRIORITY_MAX, allow_null=True, required=False
    )
    image = serializers.RegexField(
        IMAGE.pattern,
        max_length=512,
        allow_blank=True,
        required=False,
        error_messages={"invalid": "must be a container image reference such as python:3.11"},
    )
    command = serializers.ListField(
        child=serializers.CharField(max_length=4096, allow_blank=True),
        max_length=64,
        required=False,
    )
    args = serializers.ListField(
        child=serializers.CharField(max_length=4096, allow_blank=True),
        max_length=256,
        required=False,
    )
    environment = EnvironmentField(
        child=serializers.CharField(max_length=32768, allow_blank=True), required=False
    )
    secret_environment = serializers.ListField(
        child=serializers.CharField(max_length=256), required=False, max_length=256,
        help_text="names of environment variables whose values only the job's owner reads "
        "back; the project's other members see '(hidden)', viewers see no value at all",
    )  # fmt: skip
    ports = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=65535), max_length=16, required=False
    )
    service_type = serializers.ChoiceField(
        choices=ServiceType.choices, allow_blank=True, required=False
    )
    volumes = VolumeSerializer(many=True, required=False)
    sim_duration_s = serializers.IntegerField(
        min_value=1, max_value=10_000_000, allow_null=True, required=False
    )
    estimate_s = serializers.IntegerField(
        min_value=1,
        max_value=ESTIMATE_MAX_S,
        allow_null=True,
        required=False,
        help_text="your own estimate of the run time in seconds; caps the predicted run time",
    )
    topology = serializers.DictField(
        child=serializers.CharField(max_length=317),
        required=False,
        help_text='{"required": level} (every pod inside one domain of that level, or wait) '
        'and/or {"preferred": level} (packed as tightly as it can be, falling back a level '
        "at a time); a level of a node pool's topology by label key or short name (issue 38). "
        "Left out, a gang gets its project's default, else its node pools'; {} asks for none",
    )
    domain = serializers.SerializerMethodField(
        help_text="for a job with a topology constraint, the narrowest domain holding all its "
        "pods, e.g. 'rack r3' (R23.1); '' otherwise, or while it holds no node"
    )
    allocated_gpus = serializers.SerializerMethodField()
    nodes = serializers.SerializerMethodField()
    wait_s = serializers.SerializerMethodField()
    urls = serializers.SerializerMethodField()
    warnings = serializers.SerializerMethodField(
        help_text="in the answer to a submission: what was accepted but will keep the job "
        "waiting (no node large enough today, or a total above its project's or department's "
        "limit, naming it); empty otherwise"
    )
    eta = serializers.DateTimeField(
        source="shown_eta",
        read_only=True,
        allow_null=True,
        help_text="while pending: when the job is expected to start (eta_kind 'at') or the "
        "earliest it could ('not_before'); never in the past; null when it cannot be told",
    )
    eta_kind = serializers.ChoiceField(
        choices=["", "at", "not_before", "never"],
        read_only=True,
        help_text="what eta is: 'at', 'not_before' (running jobs outlived their predictions), "
        "'never' (it cannot start as submitted: see expected_start), or '' (not known)",
    )
    expected_start = serializers.CharField(
        read_only=True, help_text="the expected start in words, with what it rests on"
    )

    external = serializers.SerializerMethodField(
        help_text="for a workload another tool made (issue 33): its namespace and its top "
        "owner's kind and name ({namespace, kind, owner}); null for Allot's own jobs",
    )

    class Meta:
        model = Job
        fields = [
            "project",
            "name",
            "user",
            "external",
            "type",
            "gpus",
            "pods",
            "cpu",
            "memory",
            "cpu_limit",
            "memory_limit",
            "gpu_memory",
            *NUMBERS,
            "priority",
            "image",
            "command",
            "args",
            "environment",
            "secret_environment",
            "ports",
            "service_type",
            "volumes",
            "sim_duration_s",
            "estimate_s",
            "topology",
            "domain",
            "status",
            "allocated_gpus",
            "nodes",
            "placement",
            "submitted_at",
            "started_at",
            "finished_at",
            "queued_at",
            "wait_s",
            "pending_reason",
            "stuck",
            "expected_s",
            "expected_basis",
            "eta",
            "eta_kind",
            "expected_start",
            "urls",
            "warnings",
        ]
        read_only_fields = [
            "cpu_millis",
            "cpu_limit_millis",
            "status",
            "placement",
            "submitted_at",
            "started_at",
            "finished_at",
            "queued_at",
            "pending_reason",
            "stuck",
            "expected_s",
            "expected_basis",
            "eta",
            "eta_kind",
            "expected_start",
        ]
        # The (project, name) uniqueness is a 409 from services.submit_job, not a 400 here.
        validators = []

    def get_fields(self) -> dict:
        """DRF's fields for this serializer, copied from a set built once per class (DRF
        builds and deep-copies some fifty for each request, a fifth of a submission's CPU; what
        it builds depends only on the class). Each request gets fields of its own to bind
        (`_own_copy`): validating reads the shared arguments, choices, validators and messages
        and writes nothing on them."""
        return {name: _own_copy(field) for name, field in _built_fields(type(self)).items()}

    def to_representation(self, job: Job) -> dict:
        """The job as DRF's fields would show it, without their per-field machinery for the
        fields a job row already holds as JSON values (a page of 50 jobs is most of a list
        request's time otherwise), and without building this serializer's forty-odd fields for
        each request (`_read_plan`); `test_job_representation` holds it equal to DRF's own."""
        data = {}
        for name, how, field in _read_plan(type(self)):
            if how is _STORED:
                data[name] = getattr(job, name)
            elif how is _METHOD:  # on this serializer: its methods read this request's context
                data[name] = getattr(self, field.method_name)(job)
            elif how is _PROJECT:
                data[name] = job.project.name
            else:
                try:
                    value = field.get_attribute(job)
                except SkipField:
                    continue
                data[name] = None if value is None else field.to_representation(value)
        request = self.context.get("request")
        if "environment" in data and request is not None:  # as the reader may see them (item 8)
            data["environment"] = access.environment_for(request.user, job)
        for name in ("pending_reason", "expected_start"):  # other projects' jobs unnamed
            if data.get(name):
                data[name] = redact(self, data[name])
        return data

    def get_user(self, job: Job) -> str | None:
        return job.user.get_username() if job.user else None

    def get_external(self, job: Job) -> dict | None:
        if not job.external_uid:
            return None
        return {"namespace": job.external_namespace, "kind": job.external_kind,
                "owner": job.external_owner}  # fmt: skip

    def get_allocated_gpus(self, job: Job) -> float:
        return round(job.allocated_gpus, 3)

    def get_nodes(self, job: Job) -> list[str]:
        return job.nodes

    def get_domain(self, job: Job) -> str:
        """Only for a job with a constraint: the lookup (two queries per request, however many
        jobs) is not paid by pages of jobs that never asked for a domain."""
        if not job.topology:
            return ""
        return landing(job.nodes, self.context.setdefault("topology", {}))

    def get_warnings(self, job: Job) -> list[str]:
        return self.context.get("warnings", {}).get((job.project.name, job.name), [])

    def get_wait_s(self, job: Job) -> float:
        """Seconds the current wait lasted: from the submission, or the last eviction or resume
        (`queued_at`), to the current run's start (or its stop, or now while pending)."""
        end = job.started_at or job.finished_at or timezone.now()
        return round(max((end - job.waiting_since).total_seconds(), 0.0), 1)

    def get_urls(self, job: Job) -> list[dict]:

        return job_urls(job) if job.holds_gpus and job.ports else []

    def validate_project(self, name: str):
        """The project must exist and be visible (404 otherwise) and allow the user to submit.

        Checked once per project name and request (a bulk submission names few projects)."""
        checked = self.context.setdefault("checked_projects", {})
        if name not in checked:
            checked[name] = self._submittable_project(name)
        return checked[name]

    def _submittable_project(self, name: str):
        user = self.context["request"].user
        project = access.projects_for(user).filter(name=name).first()
        if project is None:
            raise NotFound({"project": [f"project {name!r} not found"]})
        if not access.can_submit(user, project):
            raise PermissionDenied({"project": [f"you may not submit jobs in {name}"]})
        return project

    def validate_environment(self, env: dict) -> dict:
        bad = [key for key in env if not ENV_NAME.fullmatch(key)]
        if bad:
            raise serializers.ValidationError(f"invalid variable name {bad[0]!r}")
        size = sum(len(str(key).encode()) + len(str(value).encode()) for key, value in env.items())
        cap = settings.ALLOT_MAX_ENVIRONMENT_BYTES
        if size > cap:  # issue 32 item 8: ten jobs of 2.4 MB made one job list answer 24 MB
            raise serializers.ValidationError(
                f"{size:,} bytes of names and values: a job's environment holds at most "
                f"{cap:,} bytes (ALLOT_MAX_ENVIRONMENT_BYTES); mount larger data as a volume"
            )
        steering = [key for key in env if key.startswith(STEERING_PREFIX)]
        if steering:  # the notebook server's configuration is the portal's (issue 32 item 1)
            raise serializers.ValidationError(
                f"{steering[0]}: variables named {STEERING_PREFIX}* steer the Jupyter server, "
                "whose configuration the portal sets; set it inside the notebook instead"
            )
        return env

    def validate_topology(self, value: dict) -> dict:
        """{"required": level} and/or {"preferred": level}, each a level some node pool has
        (R23.2, R23.3): a level no pool has is a 400 naming it and the levels there are."""
        unknown = sorted(set(value) - {"required", "preferred"})
        if unknown:
            raise serializers.ValidationError(
                f"unknown key {unknown[0]!r}: give required and/or preferred"
            )
        if "known_levels" not in self.context:
            self.context["known_levels"] = known_levels()
        known = self.context["known_levels"]
        for kind, level in value.items():
            if level not in known:
                names = ", ".join(sorted(known)) or "none: no node pool has a topology"
                raise serializers.ValidationError(
                    f"{kind}: {level!r} is not a topology level of any node pool (levels: {names})"
                )
        return value

    def validate_volumes(self, volumes: list[dict]) -> list[dict]:
        paths = [volume["mount_path"] for volume in volumes]
        twice = sorted({path for path in paths if paths.count(path) > 1})
        if twice:
            raise serializers.ValidationError(f"two volumes are mounted on {twice[0]}")
        return volumes

    def validate(self, attrs: dict) -> dict:
        """A job no cluster could run is a 400: a pod above `ALLOT_MAX_GPUS_PER_POD`, or pods
        that together need more GPUs than the whole cluster has (issue 22 item 8). A pod larger
        than every node today is accepted with a warning and waits for a node to join (issue 24
        item 10: nodes come and go, as in Run:AI and KAI); whether there is room today is the
        scheduler's question, not a 400. CPU, memory and GPU memory (issue 26) take their
        defaults here, and are checked the same way."""
        if "cluster_gpus" not in self.context:  # once per request, however many jobs
            self.context["cluster_gpus"] = Node.objects.aggregate(
                largest=Max("gpus"), total=Sum("gpus"), smallest_memory=Min("gpu_memory_bytes"),
                largest_memory=Max("gpu_memory_bytes"), cpu=Max("cpu_millis"),
                memory=Max("memory_bytes"),
            )  # fmt: skip
        cluster = self.context["cluster_gpus"]
        unknown = sorted(
            set(attrs.get("secret_environment", ())) - set(attrs.get("environment", {}))
        )
        if unknown:
            raise serializers.ValidationError({"secret_environment": [
                f"{unknown[0]} is not a name of the job's environment"]})  # fmt: skip
        refusal = _rendezvous_refusal(attrs.get("environment") or {}, attrs.get("pods", 1))
        if refusal:
            raise serializers.ValidationError({"environment": [refusal]})
        self._resolve_resources(attrs, cluster)
        self._default_topology(attrs)
        largest, total = cluster["largest"] or 0, cluster["total"] or 0
        gpus, pods = attrs["gpus"], attrs.get("pods", 1)
        cap = settings.ALLOT_MAX_GPUS_PER_POD
        if gpus > cap:
            raise serializers.ValidationError({"gpus": [
                f"{float(gpus):g} GPUs in one pod: no node type has that many (at most {cap}, "
                "ALLOT_MAX_GPUS_PER_POD)"
            ]})  # fmt: skip
        if pods > 1 and gpus * pods > total:
            raise serializers.ValidationError({"pods": [
                f"{pods} pods of {float(gpus):g} GPUs need {float(gpus * pods):g} GPUs, more "
                f"than the whole cluster has ({total})"
            ]})  # fmt: skip
        warnings = []
        if gpus > largest:
            warnings.append(
                f"no node has {float(gpus):g} GPUs today (the largest has {largest}): the job "
                "waits until one joins"
            )
        warnings += _larger_than_every_node(attrs, cluster)
        never = _never_starts(self.context, attrs)
        if never:  # told at once, as the ETA refresh tells it later (not "the next cycle")
            attrs["eta_kind"], attrs["eta_note"] = "never", never[:200]
            warnings.append(
                f"never starts as submitted: {never.removeprefix('cannot start: ')}{NEVER_STARTS}"
            )
        if warnings:
            project = attrs.get("project")
            key = (getattr(project, "name", project), attrs.get("name"))
            self.context.setdefault("warnings", {})[key] = warnings
        return attrs

    def _default_topology(self, attrs: dict) -> None:
        """A gang whose submission names no `topology` gets its project's or its pools'
        default (issue 38); `"topology": {}` asks for none. A one-pod job gets none: it sits on
        one node anyway, and a required level would only keep it off nodes without the label."""
        project = attrs.get("project")
        if "topology" in attrs or attrs.get("pods", 1) < 2 or not isinstance(project, Project):
            return
        if "pool_defaults" not in self.context:  # once per request, however many jobs
            self.context["pool_defaults"] = pool_defaults()
        default = default_for(project, self.context["pool_defaults"])
        if default:
            attrs["topology"] = default

    def _resolve_resources(self, attrs: dict, cluster: dict) -> None:
        """Defaults for what the job leaves out, `gpus` of a request by GPU memory, and the
        checks that need several fields: limits not under requests, a CPU-only job asks for
        something, GPU memory instead of (not with) gpus."""
        project = attrs.get("project")
        if isinstance(project, Project):
            attrs["cpu_millis"] = resources.request_with_default(
                attrs.get("cpu_millis"), attrs.get("cpu_limit_millis"),
                resources.default_cpu_millis(project),
            )  # fmt: skip
            attrs["memory_bytes"] = resources.request_with_default(
                attrs.get("memory_bytes"), attrs.get("memory_limit_bytes"),
                resources.default_memory_bytes(project),
            )  # fmt: skip
        for request, limit, name in (("cpu_millis", "cpu_limit_millis", "cpu"),
                                     ("memory_bytes", "memory_limit_bytes", "memory")):  # fmt: skip
            if attrs.get(limit) is not None and attrs.get(request, 0) > attrs[limit]:
                raise serializers.ValidationError(
                    {f"{name}_limit": [f"must be at least the {name} request"]}
                )
        gpu_memory = attrs.get("gpu_memory_bytes")
        if gpu_memory is not None:
            if "gpus" in attrs:
                raise serializers.ValidationError(
                    {"gpu_memory": ["give gpus or gpu_memory, not both"]}
                )
            attrs["gpus"] = resources.gpu_memory_share(gpu_memory, cluster["smallest_memory"])
        if "gpus" not in attrs:
            raise serializers.ValidationError({"gpus": ["This field is required."]})
        if attrs["gpus"] == 0 and not (attrs.get("cpu_millis") or attrs.get("memory_bytes")):
            raise serializers.ValidationError({"gpus": [ZERO_GPUS]})


_STORED, _METHOD, _PROJECT, _FIELD = "stored", "method", "project", "field"


@functools.cache
def _built_fields(serializer_class: type) -> dict:
    """The fields DRF's ModelSerializer builds for `serializer_class`, unbound, built once."""
    return dict(serializers.ModelSerializer.get_fields(serializer_class()))


def _own_copy(field: serializers.Field) -> serializers.Field:
    """A nested serializer (the volumes) as DRF copies it, deeply: its fields are bound to it and
    read the request's context through it. Any other field shallowly: binding sets only the
    copy's own name and parent; a list's or a map's item field, shared, is bound to the kept
    field, validates alone and reads no context."""
    return (
        copy.deepcopy(field) if isinstance(field, serializers.BaseSerializer) else copy.copy(field)
    )


@functools.cache
def _read_plan(serializer_class: type) -> tuple:
    """How each shown field of `serializer_class` is read: (name, how, field), in the fields'
    order, built once per class from a serializer made for it and kept.

    DRF builds a serializer's fields (deep copies of the declared ones and the model's, some
    forty here) for every instance, which cost a job list or a submission about a tenth of its
    time. Showing a value needs none of that per request: a field's `get_attribute` and
    `to_representation` depend only on the field's own arguments and the settings (times in
    the current time zone), not on the request; method fields are called on the serializer at
    hand, whose context they read."""
    rows = []
    for name, field in serializer_class().fields.items():
        if field.write_only:
            continue
        if name in STORED_AS_SHOWN:
            how = _STORED
        elif isinstance(field, serializers.SerializerMethodField):
            how = _METHOD
        else:
            how = _PROJECT if name == "project" else _FIELD
        rows.append((name, how, field))
    return tuple(rows)


NEVER_STARTS = "; it is accepted and stays pending until the limit or quota is raised"


def _never_starts(context: dict, attrs: dict) -> str | None:
    """Why ("cannot start: ...") the job can never start as submitted, whatever ends, or None
    (issue 34 item 6: 20 cores in a project limited to 16 were accepted without a word): its
    total above its project's or department's GPU, CPU or memory limit, or an interactive job
    above a quota - in the words of the scheduler's own `cannot_start`, which the ETA refresh
    writes too.

    Accepted with this warning, not refused: as KAI keeps such a job pending and Kueue keeps
    its workload inadmissible, since limits and quotas are an admin's to change and a job
    refused now could run after; the REST answer (`warnings`) and the page say it at submit.
    Pods larger than every node are warned about by `_larger_than_every_node`."""
    project = attrs.get("project")
    if not isinstance(project, Project):
        return None
    queues = context.setdefault("queues", {})  # once per project and request (a bulk's jobs)
    if project.name not in queues:
        queues[project.name] = _limits_of(project)
    job = QueuedJob(
        project.name, attrs.get("name", ""), float(attrs["gpus"]), attrs.get("pods", 1),
        attrs.get("type", JobType.TRAIN), attrs.get("priority"),
        cpu_millis=attrs.get("cpu_millis") or 0, memory_bytes=attrs.get("memory_bytes") or 0,
        gpu_memory_bytes=attrs.get("gpu_memory_bytes"),
    )  # fmt: skip
    note = cannot_start(queues[project.name], job)
    if note is None or not note.startswith("cannot start: "):  # "cannot start until" a node
        return None
    return note


def _limits_of(project: Project) -> Snapshot:
    """What `cannot_start` needs to say whether a job of `project` can never start: the
    project and its department, the levels whose limits and quotas it checks (R3.1, R3.2),
    read in two short queries, not the whole cluster's projects, departments and nodes (which
    cost a submission a fifth of its time). No nodes: the notes they lead to ("cannot start
    until a node ... joins") are not refusals to start whatever ends, and
    `_larger_than_every_node` tells them."""
    return _limits_of_each([project]).get(project.name, Snapshot(nodes=(), projects=()))


def _limits_of_each(projects: list[Project]) -> dict[str, Snapshot]:
    """`_limits_of` for each of `projects`, by name, in the same few queries however many
    (a bulk submission names up to a hundred projects)."""
    ids = {project.department_id for project in projects if project.department_id is not None}
    departments = load_departments(ids) if ids else ()
    loaded, _ = load_projects(
        {department.name for department in departments}, {project.name for project in projects}
    )
    by_department = {department.name: department for department in departments}
    return {
        project.name: Snapshot(
            nodes=(),
            projects=(project,),
            departments=(by_department[project.department],) if project.department else (),
        )
        for project in loaded
    }


def _larger_than_every_node(attrs: dict, cluster: dict) -> list[str]:
    """Warnings for requests no node can hold today (nodes that track the resource)."""
    warnings = []
    cpu, memory, gpu_memory = (
        attrs.get("cpu_millis"),
        attrs.get("memory_bytes"),
        attrs.get("gpu_memory_bytes"),
    )
    if cpu and cluster["cpu"] is not None and cpu > cluster["cpu"]:
        warnings.append(
            f"no node has {cores_text(cpu)} allocatable today (the largest has "
            f"{cores_text(cluster['cpu'])}): the job waits until one joins"
        )
    if memory and cluster["memory"] is not None and memory > cluster["memory"]:
        warnings.append(
            f"no node has {memory_text(memory)} memory allocatable today (the largest has "
            f"{memory_text(cluster['memory'])}): the job waits until one joins"
        )
    largest_device = cluster["largest_memory"]
    if gpu_memory and largest_device is not None and gpu_memory > largest_device:
        warnings.append(
            f"no GPU has {memory_text(gpu_memory)} memory today (the largest has "
            f"{memory_text(largest_device)}): the job waits until one joins"
        )
    return warnings


def redact(serializer, text: str) -> str:
    """`text` as the request's user may read it (`access.texts_for`), the redactor made once
    per request and kept in the serializers' shared context."""
    request = serializer.context.get("request")
    if not text or request is None:
        return text
    if "redact" not in serializer.context:
        serializer.context["redact"] = access.texts_for(request.user)
    return serializer.context["redact"](text)


class JobEventSerializer(serializers.ModelSerializer):
    """One line of a job's history (other projects' jobs named only to those who see them)."""

    class Meta:
        model = JobEvent
        fields = ["time", "kind", "message"]

    def to_representation(self, event: JobEvent) -> dict:
        data = super().to_representation(event)
        data["message"] = redact(self, data["message"])
        return data


class JobRunSerializer(serializers.ModelSerializer):
    """One start of a job: where, how long, how it ended and why, its GPU-hours."""

    nodes = serializers.ListField(child=serializers.CharField(), read_only=True)
    duration_s = serializers.SerializerMethodField()
    gpu_hours = serializers.SerializerMethodField()
    end = serializers.CharField(
        read_only=True,
        help_text="'' while it runs; completed, failed, timed out, evicted, moved or stopped",
    )

    class Meta:
        model = JobRun
        fields = ["number", "started_at", "ended_at", "duration_s", "nodes", "placement", "gpus",
                  "gpu_hours", "end", "ended_by", "reason"]  # fmt: skip
        read_only_fields = fields

    def to_representation(self, run: JobRun) -> dict:
        data = super().to_representation(run)
        data["ended_by"], data["reason"] = (
            redact(self, data["ended_by"]),
            redact(self, data["reason"]),
        )
        return data

    def get_duration_s(self, run: JobRun) -> float:
        return round(run.duration_s(self.context["now"]), 1)

    def get_gpu_hours(self, run: JobRun) -> float:
        return round(run.gpu_hours(self.context["now"]), 4)


BULK_MAX = 1000


class BulkJobsSerializer(StrictSerializer):
    """Many jobs in one request (a sweep): each as `POST /api/v1/jobs/` takes it."""

    jobs = JobSerializer(many=True, allow_empty=False, max_length=BULK_MAX)

    def to_internal_value(self, data):
        """Each job is checked as `POST /api/v1/jobs/` checks it; what its checks read per
        project (the project and the right to submit in it, its limits) is read first for all
        the batch's projects at once, in a few queries rather than a few per project."""
        jobs = data.get("jobs") if isinstance(data, dict) else None
        if isinstance(jobs, list):
            names = [job.get("project") for job in jobs if isinstance(job, dict)]
            self._read_projects({name for name in names if isinstance(name, str)})
        return super().to_internal_value(data)

    def _read_projects(self, names: set[str]) -> None:
        """Fill the shared context as `JobSerializer.validate_project` and `_never_starts` would,
        for the projects of `names` the user may submit in; the others are left to the job's own
        checks, which answer 404 or 403 for them."""
        request = self.context.get("request")
        if not names or request is None:
            return
        projects = access.submittable(request.user, names)
        self.context.setdefault("checked_projects", {}).update(projects)
        queues = self.context.setdefault("queues", {})
        queues.update(_limits_of_each(list(projects.values())))

    def validate_jobs(self, jobs: list[dict]) -> list[dict]:
        seen: set[tuple[str, str]] = set()
        for job in jobs:
            key = (job["project"].name, job["name"])
            if key in seen:
                raise serializers.ValidationError(
                    f"the job name {key[1]!r} appears twice for project {key[0]}"
                )
            seen.add(key)
        return jobs


def _rendezvous_refusal(env: dict, pods: int) -> str:
    """Why a job of several pods may not have `env` ("" when it may): each of its pods is given
    the rendezvous variables (`agents.rendezvous`: RANK, MASTER_ADDR, ...), which a job's own
    would silently contradict; only MASTER_PORT is the job's to choose, as a port number."""
    if pods <= 1:
        return ""
    taken = sorted(set(env) & (rendezvous.NAMES - {rendezvous.PORT_VARIABLE}))
    if taken:
        return (
            f"{taken[0]} is set by Allot for each pod of a job of several pods "
            "(docs/distributed.md); leave it out"
        )
    port = str(env.get(rendezvous.PORT_VARIABLE, "29500"))
    if not (port.isdigit() and 0 < int(port) < 65536):
        return f"{rendezvous.PORT_VARIABLE} must be a port number, 1 to 65535 (got {port!r})"
    return ""
