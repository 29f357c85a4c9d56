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


admin.site.register(Department)
