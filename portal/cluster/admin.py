from django.contrib import admin

from portal.cluster.models import Node


@admin.register(Node)
class NodeAdmin(admin.ModelAdmin):
    list_display = ["name", "gpus", "gpu_memory_bytes", "pool", "ready", "schedulable"]
    list_filter = ["pool", "ready", "schedulable"]
