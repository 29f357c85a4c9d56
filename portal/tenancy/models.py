"""Tenants: departments, projects (the scheduler's queues) and who may do what in them."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models

from portal.validators import NAME_MAX, validate_dns_label

GPU_AMOUNT = {"max_digits": 9, "decimal_places": 2, "validators": [MinValueValidator(0)]}


class Department(models.Model):
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
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.name


class Project(models.Model):
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
    fair_share = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.CheckConstraint(condition=models.Q(quota__gte=0), name="project_quota_gte_0"),
            models.CheckConstraint(
                condition=models.Q(limit__isnull=True) | models.Q(limit__gte=models.F("quota")),
                name="project_limit_gte_quota",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Role(models.TextChoices):
    """What a member may do in a project (cluster admins, `is_staff`, may do everything)."""

    ADMIN = "admin", "Admin"  # manage the project's members, and everything a researcher does
    RESEARCHER = "researcher", "Researcher"  # submit and delete jobs
    VIEWER = "viewer", "Viewer"  # read only


class Membership(models.Model):
    """A user's role in one project."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.RESEARCHER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "project"], name="membership_user_project")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.project} ({self.role})"
