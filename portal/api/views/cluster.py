"""REST endpoints for nodes: everyone signed in reads, cluster admins write."""

from __future__ import annotations

from rest_framework import generics

from portal import access
from portal.api.permissions import ClusterAdminWrites
from portal.api.serializers.cluster import NodeSerializer, PoolTopologySerializer
from portal.cluster import services
from portal.cluster.models import Node, PoolTopology


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


class PoolTopologyList(generics.ListCreateAPIView):
    """GET every node pool's topology levels; POST one pool's (cluster admins; a pool that has
    levels gets them replaced, as a PUT of its detail would)."""

    serializer_class = PoolTopologySerializer
    permission_classes = [ClusterAdminWrites]
    queryset = PoolTopology.objects.order_by("pool")

    def perform_create(self, serializer):
        data = dict(serializer.validated_data)
        serializer.instance = services.set_pool_topology(data.pop("pool"), **data)


class PoolTopologyDetail(generics.RetrieveUpdateDestroyAPIView):
    """GET, PUT or PATCH (its levels) or DELETE one pool's topology; writes are for cluster
    admins. Deleting it leaves the pool without domains (R23.4)."""

    serializer_class = PoolTopologySerializer
    permission_classes = [ClusterAdminWrites]
    queryset = PoolTopology.objects.all()
    lookup_field = "pool"
    lookup_url_kwarg = "pool"

    def perform_update(self, serializer):
        data = serializer.validated_data
        levels = data.get("levels", serializer.instance.levels)
        serializer.instance = services.set_pool_topology(
            serializer.instance.pool, levels, data["default_required"], data["default_preferred"]
        )

    def perform_destroy(self, row):
        services.delete_pool_topology(row)
