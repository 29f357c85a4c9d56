from django.apps import AppConfig


class JobsConfig(AppConfig):
    """Jobs, their events and the per-project usage history."""

    name = "portal.jobs"
    label = "jobs"
