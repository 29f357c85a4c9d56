"""REST endpoints for the single sign-on rules (cluster admins): /api/v1/sso/rules/."""

from __future__ import annotations

from rest_framework import generics
from rest_framework.permissions import BasePermission

from portal import access
from portal.api.serializers.sso import SSORuleSerializer
from portal.tenancy import oidc
from portal.tenancy.models import GroupRoleRule


class MayManageSSORules(BasePermission):
    message = "Only cluster admins may see or change the single sign-on rules."

    def has_permission(self, request, view) -> bool:
        return access.can_manage_sso_rules(request.user)


class SSORuleList(generics.ListCreateAPIView):
    """GET the rules that map the identity provider's groups to project roles; POST a new one.
    At each single sign-on the memberships the rules grant follow the user's groups."""

    serializer_class = SSORuleSerializer
    permission_classes = [MayManageSSORules]
    queryset = GroupRoleRule.objects.select_related("project").order_by("id")

    def perform_create(self, serializer):
        serializer.instance = oidc.create_rule(**serializer.validated_data)


class SSORuleDetail(generics.RetrieveDestroyAPIView):
    """GET or DELETE one rule (the memberships it granted go at each member's next sign-in)."""

    serializer_class = SSORuleSerializer
    permission_classes = [MayManageSSORules]
    queryset = GroupRoleRule.objects.select_related("project")

    def perform_destroy(self, rule):
        oidc.delete_rule(rule)
