from django.apps import AppConfig


class NotifyConfig(AppConfig):
    """Telling people what happened to their jobs: email, the browser, project webhooks."""

    name = "portal.notify"
    label = "notify"
