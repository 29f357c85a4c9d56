"""REST endpoints of a project's per-user limits (issue 36): its members read the default and
their own override, its admins (and cluster admins) read them all and write them
(`portal.access.user_limits_for`, `can_manage_user_limits`)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import generics
from rest_framework.exceptions import PermissionDenied
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated

from portal import access
from portal.api.serializers.userlimits import UserLimitSerializer
from portal.tenancy import services
from portal.tenancy.models import Project, UserLimit

REFUSED = "Only the project's admins may change its per-user limits."


class ProjectLimits:
    """The project by name (404 unless visible); a write by anyone but its admins is a 403,
    before the body or the limit asked for is looked at."""

    def project(self) -> Project:
        project = access.get_project_for(self.request.user, self.kwargs["name"])
        writing = self.request.method not in SAFE_METHODS
        if writing and not access.can_manage_user_limits(self.request.user, project):
            raise PermissionDenied(REFUSED)
        return project

    def get_serializer_context(self) -> dict:
        context = super().get_serializer_context()
        if "name" in self.kwargs and self.request is not None:
            context["project"] = self.project()
        return context


class UserLimitList(ProjectLimits, generics.ListCreateAPIView):
    """GET a project's per-user limits you may read; POST its default (no `user`) or a
    member's override (the project's admins)."""

    serializer_class = UserLimitSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return access.user_limits_for(self.request.user, self.project())

    def perform_create(self, serializer):
        serializer.instance = services.create_user_limit(
            serializer.context["project"], **serializer.validated_data
        )


class UserLimitDetail(ProjectLimits, generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH or DELETE one per-user limit of the project (writes: the project's admins)."""

    serializer_class = UserLimitSerializer
    permission_classes = [IsAuthenticated]
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_object(self) -> UserLimit:
        limit = access.user_limits_for(self.request.user, self.project())
        limit = limit.filter(id=self.kwargs["pk"]).first()
        if limit is None:
            raise Http404("No such per-user limit in this project.")
        return limit

    def perform_update(self, serializer):
        services.update_user_limit(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, limit):
        services.delete_user_limit(limit)
