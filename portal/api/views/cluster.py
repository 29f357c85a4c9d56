"""REST endpoints for nodes: everyone signed in reads, cluster admins write."""

from __future__ import annotations

from rest_framework import generics

from portal import access
from portal.api.permissions import ClusterAdminWrites
from portal.api.serializers.cluster import NodeSerializer
from portal.cluster import services
from portal.cluster.models import Node


class NodeContextMixin:
    """Device use is computed once per request; job names show only for visible projects."""

    def get_serializer_context(self) -> dict:
        context = super().get_serializer_context()
        user = self.request.user
        if not access.is_cluster_admin(user):
            visible = set(access.projects_for(user).values_list("id", flat=True))
            context["visible"] = lambda job: job.project_id in visible
        return context


class NodeList(NodeContextMixin, generics.ListCreateAPIView):
    """GET all nodes with their devices; POST a node (cluster admins)."""

    serializer_class = NodeSerializer
    permission_classes = [ClusterAdminWrites]
    queryset = Node.objects.order_by("name")

    def perform_create(self, serializer):
        serializer.instance = services.create_node(**serializer.validated_data)


class NodeDetail(NodeContextMixin, generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH or DELETE (no job on it) one node; writes are for cluster admins."""

    serializer_class = NodeSerializer
    permission_classes = [ClusterAdminWrites]
    queryset = Node.objects.all()
    lookup_field = "name"
    lookup_url_kwarg = "name"
    lookup_value_regex = r"[^/]+"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def perform_update(self, serializer):
        serializer.instance = services.update_node(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, node):
        services.delete_node(node)
