from django.contrib import admin

from portal.cluster.models import Node


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "gpus", "gpu_memory_bytes", "pool", "ready", "schedulable"]
    list_filter = ["pool", "ready", "schedulable"]
    # what pods Allot did not place hold: the cluster's report, never an admin's entry (issue 33)
    readonly_fields = ["outside_gpus", "outside_cpu_millis", "outside_memory_bytes"]
