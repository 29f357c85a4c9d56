"""Tenants: departments, projects (the scheduler's queues) and who may do what in them."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from portal.core.validators import MIN_RUNTIME_MAX_S, NAME_MAX, validate_dns_label

GPU_AMOUNT = {"max_digits": 9, "decimal_places": 2, "validators": [MinValueValidator(0)]}

# Minimum run time before eviction (R7.4, scheduler/minruntime.py): seconds after a job's (last)
# start during which reclaim (other projects) or preemption (its own project) may not take it.
# None: as the department says, else the cluster default (ALLOT_RECLAIM_MIN_RUNTIME,
# ALLOT_PREEMPT_MIN_RUNTIME); 0: no protection; -1: never taken that way.
MIN_RUNTIME_FIELDS = ("reclaim_min_runtime_s", "preempt_min_runtime_s")
MIN_RUNTIME_NEVER = -1
MIN_RUNTIME_VALUES = f"-1 (never) or 0 to {MIN_RUNTIME_MAX_S} seconds"
MIN_RUNTIME_RANGE = f"must be {MIN_RUNTIME_VALUES}"


def min_runtime_field(help_text: str) -> models.IntegerField:
    """A nullable R7.4 minimum run time in seconds: -1 or 0 to a year (the model's validators,
    for the Django admin; the API checks the same range)."""
    return models.IntegerField(
        null=True,
        blank=True,
        help_text=help_text,
        validators=[
            MinValueValidator(MIN_RUNTIME_NEVER, message=MIN_RUNTIME_RANGE),
            MaxValueValidator(MIN_RUNTIME_MAX_S, message=MIN_RUNTIME_RANGE),
        ],
    )


def min_runtime_constraints(table: str) -> list[models.CheckConstraint]:
    """The database's side of the R7.4 fields: null, -1 or a non-negative number of seconds."""
    return [
        models.CheckConstraint(
            condition=models.Q(**{f"{field}__isnull": True})
            | models.Q(**{f"{field}__gte": MIN_RUNTIME_NEVER}),
            name=f"{table}_{field}_valid",
            violation_error_message=f"{field} {MIN_RUNTIME_RANGE}",
        )
        for field in MIN_RUNTIME_FIELDS
    ]


RECLAIM_HELP = (
    "Minimum run time before reclaim, in seconds: a job is not taken back by other projects "
    "until it has run this long. Empty = as the department / cluster says; 0 = no protection; "
    "-1 = never."
)
PREEMPT_HELP = (
    "Minimum run time before preemption, in seconds: a job is not preempted by its own "
    "project's higher-priority jobs until it has run this long. Empty = as the department / "
    "cluster says; 0 = no protection; -1 = never."
)
DEPARTMENT_RECLAIM_HELP = (
    "Minimum run time before reclaim, in seconds: a job of this department's projects is not "
    "taken back by other departments' projects (nor, unless a project sets its own, by its "
    "sibling projects) until it has run this long. Empty = the cluster default; 0 = no "
    "protection; -1 = never."
)
DEPARTMENT_PREEMPT_HELP = (
    "Minimum run time before preemption, in seconds, for the projects that do not set their "
    "own. Empty = the cluster default; 0 = no protection; -1 = never."
)


class ResourceLimits(models.Model):
    """The most CPU (millicores) and memory (bytes) a queue's running jobs may hold together
    (None: no limit; like `limit`, R3.1, checked on every queue of a job's path; fair share
    stays in GPUs) - a project's and a department's (issue 26)."""

    cpu_limit_millis = models.PositiveIntegerField(null=True, blank=True)
    memory_limit_bytes = models.PositiveBigIntegerField(null=True, blank=True)

    class Meta:
        abstract = True


class Department(ResourceLimits):
    """A parent queue (R2.11): its projects divide its fair share among themselves."""

    name = models.CharField(max_length=NAME_MAX, unique=True, validators=[validate_dns_label])
    quota = models.DecimalField(**GPU_AMOUNT)
    over_quota_weight = models.DecimalField(null=True, blank=True, **GPU_AMOUNT)
    limit = models.DecimalField(null=True, blank=True, **GPU_AMOUNT)
    interactive_time_limit_s = models.PositiveIntegerField(null=True, blank=True)
    # Job health policies (Step 8); on a project, None means "as its department says"
    training_max_runtime_s = models.PositiveIntegerField(null=True, blank=True)
    interactive_idle_timeout_s = models.PositiveIntegerField(null=True, blank=True)
    train_idle_timeout_s = models.PositiveIntegerField(null=True, blank=True)
    idle_threshold = models.FloatField(null=True, blank=True)  # 0..1, default 0.01
    timeout_warning_s = models.PositiveIntegerField(null=True, blank=True)  # default 900
    timeout_extension_s = models.PositiveIntegerField(null=True, blank=True)  # None: no extending
    stuck_after_s = models.PositiveIntegerField(null=True, blank=True)  # training without output
    stuck_stop_after_s = models.PositiveIntegerField(null=True, blank=True)  # None: only flag
    # Minimum run time before eviction (R7.4); None: the cluster default
    reclaim_min_runtime_s = min_runtime_field(DEPARTMENT_RECLAIM_HELP)
    preempt_min_runtime_s = min_runtime_field(DEPARTMENT_PREEMPT_HELP)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = min_runtime_constraints("department")

    def __str__(self) -> str:
        return self.name


class Project(ResourceLimits):
    """A team's queue: guaranteed `quota`, over-quota weight (null = quota), limit (null = none).

    `node_pools` lists the pools its jobs may use (empty = any). `fair_share` is written by the
    scheduling cycle (R2); the id is the creation order of the R2.10 tie-breaks.
    """

    name = models.CharField(max_length=NAME_MAX, unique=True, validators=[validate_dns_label])
    department = models.ForeignKey(
        Department, null=True, blank=True, on_delete=models.PROTECT, related_name="projects"
    )
    quota = models.DecimalField(**GPU_AMOUNT)
    over_quota_weight = models.DecimalField(null=True, blank=True, **GPU_AMOUNT)
    limit = models.DecimalField(null=True, blank=True, **GPU_AMOUNT)
    node_pools = models.JSONField(default=list, blank=True)
    # Kubernetes namespaces besides its own (`allot-<name>`) whose pods with `schedulerName:
    # allot` are this project's external workloads (issue 33), as Run:AI maps namespaces to
    # projects; a namespace belongs to one project at most (checked where it is set).
    namespaces = models.JSONField(default=list, blank=True)
    interactive_time_limit_s = models.PositiveIntegerField(null=True, blank=True)
    # Job health policies (Step 8); on a project, None means "as its department says"
    training_max_runtime_s = models.PositiveIntegerField(null=True, blank=True)
    interactive_idle_timeout_s = models.PositiveIntegerField(null=True, blank=True)
    train_idle_timeout_s = models.PositiveIntegerField(null=True, blank=True)
    idle_threshold = models.FloatField(null=True, blank=True)  # 0..1, default 0.01
    timeout_warning_s = models.PositiveIntegerField(null=True, blank=True)  # default 900
    timeout_extension_s = models.PositiveIntegerField(null=True, blank=True)  # None: no extending
    stuck_after_s = models.PositiveIntegerField(null=True, blank=True)  # training without output
    stuck_stop_after_s = models.PositiveIntegerField(null=True, blank=True)  # None: only flag
    # Minimum run time before eviction (R7.4); None: as its department says, else the cluster's
    reclaim_min_runtime_s = min_runtime_field(RECLAIM_HELP)
    preempt_min_runtime_s = min_runtime_field(PREEMPT_HELP)
    # CPU (millicores) and memory (bytes) per pod for jobs that do not say (None: the cluster's
    # ALLOT_DEFAULT_CPU / ALLOT_DEFAULT_MEMORY) - issue 26; its limits are ResourceLimits'.
    default_cpu_millis = models.PositiveIntegerField(null=True, blank=True)
    default_memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    fair_share = models.FloatField(default=0.0)
    # Fair share between the project's users (issue 36, R21.4-R21.8, docs/user-fairness.md):
    # off by default; `user_weights` maps a username to its weight in the division (absent: 1,
    # every weight above 0, checked by the API's serializer); `user_fair_shares` is written by
    # the cycle, as `fair_share` is: the active users' shares in GPUs.
    user_fair_share = models.BooleanField(default=False)
    user_weights = models.JSONField(default=dict, blank=True)
    user_fair_shares = models.JSONField(default=dict, blank=True)
    # The topology constraint a gang of this project gets when its submission names none
    # (issue 38): a level by label key or short name, "" for none. It wins over its pools'.
    default_topology_required = models.CharField(max_length=317, blank=True, default="")
    default_topology_preferred = models.CharField(max_length=317, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(quota__gte=0), name="project_quota_gte_0"),
            models.CheckConstraint(
                condition=models.Q(limit__isnull=True) | models.Q(limit__gte=models.F("quota")),
                name="project_limit_gte_quota",
            ),
            *min_runtime_constraints("project"),
        ]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """What a member may do in a project (cluster admins, `is_staff`, may do everything)."""

    ADMIN = "admin", "Admin"  # manage the project's members, and everything a researcher does
    RESEARCHER = "researcher", "Researcher"  # submit and delete jobs
    VIEWER = "viewer", "Viewer"  # read only


class Source(models.TextChoices):
    """Where a membership comes from."""

    LOCAL = "local", "Added by hand"
    SSO = "sso", "Single sign-on rule"


class Membership(models.Model):
    """A user's role in one project."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.RESEARCHER)
    # Who granted it: a person (the page, the API, a command) or the single sign-on rules, which
    # change and remove at each sign-in only the memberships they granted (portal.tenancy.oidc).
    source = models.CharField(max_length=8, choices=Source.choices, default=Source.LOCAL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="membership_user_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"


LIMIT_COUNT_MAX = 100_000  # a per-user count limit above this is a typing slip, not a policy


class UserLimit(models.Model):
    """A per-user limit inside a project (issue 36, docs/user-fairness.md): with `user` null, the
    project default for each of its users; naming a user, that user's override, field by field (a
    null field falls back to the default; null in the default: no limit).

    `max_gpus`, `max_running` and `max_interactive` go to the scheduling core as
    `scheduler.model.UserLimit` (R21.1-R21.3), which makes a job over them wait naming the limit;
    `max_pending` bites at submission (`portal.jobs.services.refuse_over_pending_caps`): a pending
    job holds nothing the core could withhold from a teammate, so only the queue length is capped.
    """

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="user_limits")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="user_limits",
    )  # fmt: skip
    max_gpus = models.DecimalField(null=True, blank=True, **GPU_AMOUNT)
    max_running = models.PositiveIntegerField(null=True, blank=True)
    max_pending = models.PositiveIntegerField(null=True, blank=True)
    max_interactive = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    FIELDS = ("max_gpus", "max_running", "max_pending", "max_interactive")

    class Meta:
        # the project default first, then the overrides by username
        ordering = ["project_id", models.F("user__username").asc(nulls_first=True)]
        constraints = [
            models.UniqueConstraint(fields=["project", "user"], name="userlimit_project_user"),
            models.UniqueConstraint(
                fields=["project"],
                condition=models.Q(user__isnull=True),
                name="userlimit_one_default",
            ),
            models.CheckConstraint(
                condition=models.Q(max_gpus__isnull=True) | models.Q(max_gpus__gte=0),
                name="userlimit_max_gpus_gte_0",
            ),
        ]

    def __str__(self) -> str:
        who = self.user.get_username() if self.user_id else "every user"
        return f"per-user limit of {who} in {self.project}"

    @property
    def limits(self) -> list:
        """Its values in FIELDS order (a table's cells)."""
        return [getattr(self, field) for field in self.FIELDS]


# --- API tokens (issue 22 item 7) -------------------------------------------------------------
# A token is `allot_` and 40 random URL-safe characters (240 bits). Only its SHA-256 is stored:
# a high-entropy secret needs no slow hash, and a lookup by digest leaks no timing about the
# secret. The first characters (TOKEN_PREFIX_LEN) are kept in the clear so the owner can tell
# their tokens apart; they say nothing useful about the rest.
TOKEN_SCHEME = "allot_"
TOKEN_PREFIX_LEN = len(TOKEN_SCHEME) + 6
TOKEN_NAME_MAX = 100


TOKEN_LONGEST_LIFE = timedelta(days=3650)
TOKEN_EXPIRY_FORMS = "a duration such as 90m, 12h, 30d or 2w, or an ISO 8601 date and time"
_DURATION = re.compile(r"(\d{1,7})([mhdw])")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_token_expiry(text: str, now: datetime) -> datetime:
    """When a token asked to expire at `text` expires: a duration from `now` or a moment (UTC
    when it names no zone), in the future and at most TOKEN_LONGEST_LIFE away; else ValueError
    with the reason (the API's and the pages' message)."""
    too_far = ValueError(f"must be at most {TOKEN_LONGEST_LIFE.days} days from now")
    if match := _DURATION.fullmatch(text.strip()):
        amount = int(match[1])
        if amount > TOKEN_LONGEST_LIFE.days * 24 * 60:  # beyond every unit's range: no overflow
            raise too_far
        when = now + timedelta(**{_UNITS[match[2]]: amount})
    else:
        when = _moment(text.strip())
    if when <= now:
        raise ValueError("must be in the future")
    if when - now > TOKEN_LONGEST_LIFE:
        raise too_far
    return when


def _moment(text: str) -> datetime:
    try:
        when = parse_datetime(text)
    except ValueError:  # well-formed but impossible (a 31st of February)
        when = None
    if when is None:
        raise ValueError(f"must be {TOKEN_EXPIRY_FORMS}")
    return when.replace(tzinfo=UTC) if timezone.is_naive(when) else when


def token_digest(key: str) -> str:
    """The SHA-256 (hex) stored for the token `key`."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def new_token_key() -> str:
    """A new token's secret: shown once, never stored."""
    return TOKEN_SCHEME + secrets.token_urlsafe(30)


class ApiToken(models.Model):
    """One named API token of a user: a client signs in with `Authorization: Token <key>`.

    Every sign-in (`POST /api/v1/auth/token/`, `allot login`) and every token made on `/me/`
    is a new row. A revoked token is kept (with when and why) so its client hears why it is
    refused; changing the password revokes them all (`portal.tenancy.passwords`)."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=TOKEN_NAME_MAX)
    prefix = models.CharField(max_length=16, help_text="the key's first characters, to tell it")
    digest = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key (hex)")
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_reason = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…) of {self.user}"

    def is_expired(self, now=None) -> bool:
        return self.expires_at is not None and self.expires_at <= (now or timezone.now())


# --- Single sign-on (OpenID Connect, portal.tenancy.oidc) ---------------------------------------


class GroupRoleRule(models.Model):
    """Members of the identity provider's group `group` get `role` in `project` when they sign in
    with single sign-on; several rules for one project: the strongest role wins."""

    group = models.CharField(max_length=200)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="sso_rules")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.RESEARCHER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["group", "project__name"]
        constraints = [
            models.UniqueConstraint(fields=["group", "project"], name="sso_rule_group_project")
        ]

    def __str__(self) -> str:
        return f"{self.group} -> {self.role} in {self.project}"


class SSOIdentity(models.Model):
    """The identity provider's account (`issuer`, `subject`: the ID token's iss and sub) that
    signs in as `user`: found by these two, never by a username the provider sends."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_login = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_iss_sub")
        ]

    def __str__(self) -> str:
        return f"{self.user} = {self.subject} at {self.issuer}"
