"""REST endpoints of budgets (issue 36): anyone signed in reads the budgets they may see
(`portal.access.budget_filter`), with what each has used; cluster admins write them."""

from __future__ import annotations

from rest_framework import generics

from portal import access
from portal.api.permissions import ClusterAdminWrites
from portal.api.serializers.budgets import BudgetSerializer
from portal.budgets import services
from portal.budgets.models import Budget


class BudgetScope:
    """The budgets the asker may see, their scope's rows joined."""

    def get_queryset(self):
        visible = Budget.objects.filter(access.budget_filter(self.request.user)).distinct()
        return visible.select_related("project", "department", "user").order_by("id")


class BudgetList(BudgetScope, generics.ListCreateAPIView):
    """GET the budgets you may see, with their use; POST a new one (cluster admins)."""

    serializer_class = BudgetSerializer
    permission_classes = [ClusterAdminWrites]

    def perform_create(self, serializer):
        serializer.instance = services.create_budget(**serializer.validated_data)


class BudgetDetail(BudgetScope, generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH or DELETE one budget (writes: cluster admins)."""

    serializer_class = BudgetSerializer
    permission_classes = [ClusterAdminWrites]
    lookup_url_kwarg = "pk"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def perform_update(self, serializer):
        services.update_budget(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, budget):
        services.delete_budget(budget)
