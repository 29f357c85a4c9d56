from django.contrib import admin

from portal.jobs.models import Job, JobEvent


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "type", "gpus", "pods", "status", "submitted_at"]
    list_filter = ["status", "type", "project"]
    # The scheduling cycle owns these; editing them by hand would bypass its checks.
    readonly_fields = ["status", "placement", "pending_reason", "started_at", "finished_at"]


@admin.register(JobEvent)
class JobEventAdmin(admin.ModelAdmin):
    list_display = ["time", "project", "job_name", "kind", "message"]
    list_filter = ["kind", "project"]
