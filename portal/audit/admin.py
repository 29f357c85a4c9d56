"""The audit log in Django's admin: read only (no add, change or delete)."""

from django.contrib import admin

from portal.audit.models import AuditEntry


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["time", "actor_username", "address", "action", "target_type", "target_label"]
    list_filter = ["action", "target_type"]
    search_fields = ["actor_username", "target_label", "action", "address"]
    date_hierarchy = "time"

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
