from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The scheduling cycle, its Celery task, the embedded timer and the agent glue (no models)."""

    name = "portal.scheduling"
    label = "scheduling"
