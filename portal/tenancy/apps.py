from django.apps import AppConfig


class TenancyConfig(AppConfig):
    """Projects, departments, memberships and the access helpers every view goes through."""

    name = "portal.tenancy"
    label = "tenancy"
