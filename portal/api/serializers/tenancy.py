"""Projects, members and users in the REST API."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from agents.kubernetes.names import namespace_for
from portal.api.errors import MISSING
from portal.api.fields import StrictModelSerializer, StrictSlugRelatedField
from portal.api.serializers.jobs import dns_label
from portal.api.serializers.quantities import MibField, QuantityField
from portal.cluster import topology
from portal.cluster.models import Node
from portal.core.validators import MIN_RUNTIME_MAX_S, NAME_MAX
from portal.tenancy.models import (
    DEPARTMENT_PREEMPT_HELP,
    DEPARTMENT_RECLAIM_HELP,
    MIN_RUNTIME_NEVER,
    MIN_RUNTIME_RANGE,
    MIN_RUNTIME_VALUES,
    PREEMPT_HELP,
    RECLAIM_HELP,
    Department,
    Membership,
    Project,
    Role,
)

WEIGHT_MAX = 1000  # a user's weight in their project's user fair share (R21.4)
WEIGHTS_MAX = 1000  # users weighted in one project
GPUS = {"max_digits": 9, "decimal_places": 2, "min_value": 0}
# a policy in seconds; null: as the department says, else off (see portal.jobs.health)
SECONDS = {"min_value": 1, "max_value": 365 * 24 * 3600, "allow_null": True, "required": False}
# a minimum run time before eviction (R7.4): -1 (never) or 0 to a year; null: as the department
# says, else the cluster default
MIN_RUNTIME = {
    "min_value": MIN_RUNTIME_NEVER, "max_value": MIN_RUNTIME_MAX_S, "allow_null": True,
    "required": False,
    "error_messages": {
        "min_value": MIN_RUNTIME_RANGE, "max_value": MIN_RUNTIME_RANGE,
        "invalid": f"must be a whole number: {MIN_RUNTIME_VALUES}",
    },
}  # fmt: skip


# the fields a project and a department share (QueueSerializer): GPUs, then CPU and memory
QUEUE_FIELDS = ["name", "quota", "over_quota_weight", "limit"]
LIMIT_NUMBERS = ["cpu_limit_millis", "memory_limit_mib"]  # MiB as before issue 33
LIMIT_FIELDS = ["cpu_limit", "memory_limit", *LIMIT_NUMBERS]


class QueueSerializer(StrictModelSerializer):
    """What a project and a department (both queues of the scheduler) share: a name fixed at
    creation, the GPU quota, weight and limit (a limit below the quota refused), and the CPU and
    memory limits as Kubernetes quantities (R3.1, issue 26)."""

    create_only = ("name",)  # a PATCH refuses another; not in its schema (portal/api/schema.py)
    kind = "queue"  # the word its messages use

    name = serializers.CharField(max_length=NAME_MAX, validators=[dns_label])
    quota = serializers.DecimalField(**GPUS)
    over_quota_weight = serializers.DecimalField(allow_null=True, required=False, **GPUS)
    limit = serializers.DecimalField(allow_null=True, required=False, **GPUS)
    cpu_limit = QuantityField(
        "cpu",
        source="cpu_limit_millis",
        help_text="the most CPU the running jobs hold together (a department's: of all its "
        "projects; null: no limit)",
    )
    memory_limit = QuantityField(
        "memory",
        source="memory_limit_bytes",
        help_text="the most memory the running jobs hold together (a department's: of all its "
        "projects; null: no limit)",
    )
    memory_limit_mib = MibField(source="memory_limit_bytes")

    class Meta:  # the shared part alone, as a project's; each queue's serializer lists its own
        model = Project
        fields = [*QUEUE_FIELDS, *LIMIT_FIELDS]
        read_only_fields = LIMIT_NUMBERS

    def validate_name(self, name: str) -> str:
        if self.instance is not None and name != self.instance.name:
            raise serializers.ValidationError(f"a {self.kind}'s name cannot be changed")
        return name

    def validate(self, attrs: dict) -> dict:
        quota = attrs.get("quota", getattr(self.instance, "quota", None))
        limit = attrs.get("limit", getattr(self.instance, "limit", None))
        if limit is not None and quota is not None and limit < quota:
            raise serializers.ValidationError(
                {"limit": [f"must be at least the quota ({quota:g}), or null for no limit"]}
            )
        return attrs


class ProjectSerializer(QueueSerializer):
    """A project's settings; usage figures are read-only (annotated by the view's queryset)."""

    kind = "project"
    department = StrictSlugRelatedField(
        slug_field="name",
        queryset=Department.objects.all(),
        allow_null=True,
        required=False,
        error_messages={"does_not_exist": "No department named {value!r}."},
        help_text="the department (parent queue, R2.11) whose fair share it divides with its "
        "sibling projects; null: none",
    )
    node_pools = serializers.ListField(
        child=serializers.CharField(max_length=63, trim_whitespace=False, validators=[dns_label]),
        max_length=64,
        required=False,
    )
    namespaces = serializers.ListField(
        child=serializers.CharField(max_length=63, trim_whitespace=False, validators=[dns_label]),
        max_length=64,
        required=False,
        help_text="Kubernetes namespaces besides allot-<name> whose pods with schedulerName "
        "allot are this project's external workloads (issue 33)",
    )
    interactive_time_limit_s = serializers.IntegerField(
        min_value=1, max_value=365 * 24 * 3600, allow_null=True, required=False
    )
    training_max_runtime_s = serializers.IntegerField(**SECONDS)
    interactive_idle_timeout_s = serializers.IntegerField(**SECONDS)
    train_idle_timeout_s = serializers.IntegerField(**SECONDS)
    idle_threshold = serializers.FloatField(
        min_value=0.0, max_value=1.0, allow_null=True, required=False,
        help_text="utilization (0..1) under which a GPU counts as idle; null: 0.01",
    )  # fmt: skip
    timeout_warning_s = serializers.IntegerField(**SECONDS)
    timeout_extension_s = serializers.IntegerField(**SECONDS)
    stuck_after_s = serializers.IntegerField(**SECONDS)
    stuck_stop_after_s = serializers.IntegerField(**SECONDS)
    reclaim_min_runtime_s = serializers.IntegerField(help_text=RECLAIM_HELP, **MIN_RUNTIME)
    preempt_min_runtime_s = serializers.IntegerField(help_text=PREEMPT_HELP, **MIN_RUNTIME)
    default_cpu = QuantityField(
        "cpu",
        source="default_cpu_millis",
        help_text="CPU per pod for jobs that do not say (null: the cluster's default)",
    )
    default_memory = QuantityField(
        "memory",
        source="default_memory_bytes",
        help_text="memory per pod for jobs that do not say (null: the cluster's)",
    )
    default_memory_mib = MibField(source="default_memory_bytes")
    user_weights = serializers.DictField(
        child=serializers.FloatField(),
        required=False,
        help_text="with user_fair_share, each listed user's weight in dividing the project's "
        "fair share (above 0; a user not listed weighs 1), R21.4",
    )
    default_topology_required = serializers.CharField(
        max_length=317, allow_blank=True, allow_null=True, required=False,
        help_text="the level a gang of this project must fit in when its submission names no "
        "topology (issue 38), e.g. rack; '' or null: none (its node pools' default applies)",
    )  # fmt: skip
    default_topology_preferred = serializers.CharField(
        max_length=317, allow_blank=True, allow_null=True, required=False,
        help_text="the level a gang of this project is packed into when its submission names "
        "no topology (issue 38), e.g. block; '' or null: none",
    )  # fmt: skip
    allocated_gpus = serializers.SerializerMethodField()
    running_jobs = serializers.SerializerMethodField()
    pending_jobs = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = [
            *QUEUE_FIELDS,
            "department",
            "node_pools",
            "namespaces",
            "interactive_time_limit_s",
            "training_max_runtime_s",
            "interactive_idle_timeout_s",
            "train_idle_timeout_s",
            "idle_threshold",
            "timeout_warning_s",
            "timeout_extension_s",
            "stuck_after_s",
            "stuck_stop_after_s",
            "reclaim_min_runtime_s",
            "preempt_min_runtime_s",
            "default_cpu",
            "default_memory",
            "default_cpu_millis",
            "default_memory_mib",
            *LIMIT_FIELDS,
            "user_fair_share",
            "user_weights",
            "default_topology_required",
            "default_topology_preferred",
            "allocated_gpus",
            "fair_share",
            "user_fair_shares",
            "running_jobs",
            "pending_jobs",
            "created_at",
        ]
        extra_kwargs = {
            "user_fair_share": {
                "help_text": "divide the project's fair share among its active users, with "
                "reclaim between them (issue 36, R21.4-R21.8); off by default"
            },
            "user_fair_shares": {
                "help_text": "the active users' fair shares in GPUs, as the last scheduling "
                "cycle divided them (R21.4); empty when user_fair_share is off"
            },
        }
        read_only_fields = [
            "fair_share",
            "user_fair_shares",
            "created_at",
            "default_cpu_millis",
            *LIMIT_NUMBERS,
        ]

    def get_allocated_gpus(self, project: Project) -> float:
        return round(float(getattr(project, "allocated", None) or 0), 3)

    def get_running_jobs(self, project: Project) -> int:
        return getattr(project, "running", 0)

    def get_pending_jobs(self, project: Project) -> int:
        return getattr(project, "pending", 0)

    def to_representation(self, project: Project) -> dict:
        data = super().to_representation(project)
        data["fair_share"] = round(project.fair_share, 3)
        return data

    def validate_namespaces(self, namespaces: list[str]) -> list[str]:
        """Each namespace maps to one project at most: not another's own (`allot-<name>`) nor
        one mapped to another (issue 33)."""
        mine = self.instance.pk if self.instance is not None else None
        name = self.initial_data.get("name") if mine is None else self.instance.name
        owners = {}
        for project in Project.objects.exclude(pk=mine).only("name", "namespaces"):
            for namespace in (namespace_for(project.name), *(project.namespaces or ())):
                owners.setdefault(namespace, project.name)
        for namespace in namespaces:
            if namespace in owners:
                raise serializers.ValidationError(
                    f"namespace {namespace} already belongs to project {owners[namespace]}"
                )
            if isinstance(name, str) and namespace == namespace_for(name):
                raise serializers.ValidationError(
                    f"{namespace} is this project's own namespace: list only others"
                )
        return list(dict.fromkeys(namespaces))

    def validate_user_weights(self, weights: dict[str, float]) -> dict[str, float]:
        """Each weight above 0 and at most 1000, each key a known user (R21.4)."""
        if len(weights) > WEIGHTS_MAX:
            raise serializers.ValidationError(f"at most {WEIGHTS_MAX} users may be weighted")
        for user, weight in weights.items():
            if not (0 < weight <= WEIGHT_MAX):
                raise serializers.ValidationError(
                    f"{user!r}: a weight must be above 0 and at most {WEIGHT_MAX}, not {weight:g}"
                )
        known = set(
            get_user_model()
            .objects.filter(username__in=list(weights))
            .values_list("username", flat=True)
        )
        unknown = sorted(set(weights) - known)
        if unknown:
            raise serializers.ValidationError(f"no user named {unknown[0]!r}", code=MISSING)
        return dict(sorted(weights.items()))

    def validate_default_topology_required(self, level: str | None) -> str:
        return _default_level("required", level)

    def validate_default_topology_preferred(self, level: str | None) -> str:
        return _default_level("preferred", level)

    def validate_node_pools(self, pools: list[str]) -> list[str]:
        known = set(Node.objects.values_list("pool", flat=True))
        unknown = [pool for pool in pools if pool not in known]
        if unknown:
            listed = ", ".join(sorted(known)) or "none"
            raise serializers.ValidationError(
                f"unknown node pool {unknown[0]!r} (known: {listed})", code=MISSING
            )
        return list(dict.fromkeys(pools))


def _default_level(kind: str, level: str | None) -> str:
    """A project's default level ("" for none): a level some node pool has, as a job's."""
    level = (level or "").strip()
    known = topology.known_levels()
    if level and level not in known:
        names = ", ".join(sorted(known)) or "none: no node pool has a topology"
        raise serializers.ValidationError(
            f"{kind}: {level!r} is not a topology level of any node pool (levels: {names})"
        )
    return level


class DepartmentSerializer(QueueSerializer):
    """A department (a parent queue, R2.11): its GPU quota, weight and limit, minimum run times
    (R7.4) and the CPU and memory limits all its projects' running jobs share (issue 26); its
    projects are listed by name, set on each project."""

    kind = "department"
    reclaim_min_runtime_s = serializers.IntegerField(
        help_text=DEPARTMENT_RECLAIM_HELP, **MIN_RUNTIME
    )
    preempt_min_runtime_s = serializers.IntegerField(
        help_text=DEPARTMENT_PREEMPT_HELP, **MIN_RUNTIME
    )
    projects = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = Department
        fields = [
            *QUEUE_FIELDS,
            "reclaim_min_runtime_s",
            "preempt_min_runtime_s",
            *LIMIT_FIELDS,
            "projects",
            "created_at",
        ]
        read_only_fields = ["created_at", *LIMIT_NUMBERS]


class MembershipSerializer(StrictModelSerializer):
    """A member of a project: a username and a role."""

    # Read from the member's user; written as a username that validate_username resolves.
    username = serializers.CharField(max_length=150, source="user.username")
    role = serializers.ChoiceField(choices=Role.choices, default=Role.RESEARCHER)

    class Meta:
        model = Membership
        fields = ["username", "role", "created_at"]
        read_only_fields = ["created_at"]

    def validate_username(self, username: str):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise serializers.ValidationError(f"no user named {username!r}", code=MISSING)
        return user


class UserSerializer(StrictModelSerializer):
    """A portal account; the password is write-only and checked by Django's validators."""

    username = serializers.CharField(max_length=150, validators=[UnicodeUsernameValidator()])
    password = serializers.CharField(
        write_only=True, max_length=128, style={"input_type": "password"},
        help_text="checked by Django's password validators: at least 8 characters, not a common "
        "password, not all digits, not like the username or email",
    )  # fmt: skip

    class Meta:
        model = get_user_model()
        fields = ["username", "password", "email", "is_staff", "date_joined"]
        read_only_fields = ["date_joined"]

    def validate(self, attrs: dict) -> dict:
        candidate = get_user_model()(username=attrs.get("username"), email=attrs.get("email", ""))
        try:
            validate_password(attrs["password"], candidate)
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"password": exc.messages}) from None
        return attrs


class AccountSerializer(StrictModelSerializer):
    """A portal account as a cluster admin changes it: active or not, cluster admin or not."""

    # an account may have no email address: "" (so the schema's format email allows it)
    email = serializers.EmailField(read_only=True, allow_blank=True)

    class Meta:
        model = get_user_model()
        fields = ["username", "email", "is_active", "is_staff", "date_joined", "last_login"]
        read_only_fields = ["username", "email", "date_joined", "last_login"]
