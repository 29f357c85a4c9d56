from django.apps import AppConfig


class ClusterConfig(AppConfig):
    """Nodes and their GPU devices."""

    name = "portal.cluster"
    label = "cluster"
