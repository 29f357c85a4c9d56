from django.apps import AppConfig


class SchedulingConfig(AppConfig):
    """The scheduling cycle, its Celery task, the embedded timer and the agent glue, and the
    replay clock's row (`portal.core.clock`)."""

    name = "portal.scheduling"
    label = "scheduling"

    def ready(self) -> None:
        from portal.core import clock
        from portal.scheduling import checks  # noqa: F401 - registers the system checks
        from portal.scheduling.clock import stored

        clock.install(stored)
