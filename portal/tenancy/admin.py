from django.contrib import admin

from portal.tenancy import services
from portal.tenancy.models import ApiToken, Department, Membership, Project


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
    """Departments, also edited on /departments/ and over /api/v1/departments/ (which take CPU
    and memory as Kubernetes quantities); their minimum run times (R7.4) and CPU (millicores)
    and memory (bytes) limits are listed too."""

    list_display = ["name", "quota", "over_quota_weight", "limit", "reclaim_min_runtime_s",
                    "preempt_min_runtime_s", "cpu_limit_millis", "memory_limit_bytes"]  # fmt: skip


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are listed and revoked here, never made (a key is shown once, to its owner: by
    signing in, on /me/ or with `manage.py issue_token`) nor deleted (a revoked one says why)."""

    list_display = ["name", "user", "prefix", "created", "last_used", "expires_at", "revoked_at"]
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    readonly_fields = ["user", "name", "prefix", "digest", "created", "last_used", "expires_at",
                       "revoked_at", "revoked_reason"]  # fmt: skip
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke(self, request, queryset):
        revoked = sum(services.revoke_token(token, by=request.user) for token in queryset)
        self.message_user(request, f"{revoked} token(s) revoked.")
