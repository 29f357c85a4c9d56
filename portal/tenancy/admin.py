from django.contrib import admin

from portal.tenancy.models import Department, Membership, Project


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "quota", "over_quota_weight", "limit", "fair_share", "department"]
    readonly_fields = ["fair_share"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]


@admin.register(Department)
class DepartmentAdmin(admin.ModelAdmin):
    """Departments are edited here only; their minimum run times (R7.4) are listed too."""

    list_display = ["name", "quota", "over_quota_weight", "limit", "reclaim_min_runtime_s",
                    "preempt_min_runtime_s"]  # fmt: skip
