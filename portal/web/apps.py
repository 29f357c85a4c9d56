from django.apps import AppConfig


class WebConfig(AppConfig):
    """The server-rendered pages (overview, analytics, sign-in) and their websockets."""

    name = "portal.web"
    label = "web"
