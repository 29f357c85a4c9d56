"""REST endpoints for departments, projects, their members and users."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.http import Http404
from rest_framework import generics, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from portal import access
from portal.api.permissions import (
    ClusterAdminWrites,
    IsClusterAdmin,
    MayEditProject,
    MayManageMembers,
)
from portal.api.serializers.fairshare import ProjectWithUsageSerializer
from portal.api.serializers.tenancy import (
    AccountSerializer,
    DepartmentSerializer,
    MembershipSerializer,
    ProjectSerializer,
    UserSerializer,
)
from portal.jobs.queries import with_usage
from portal.scheduling import fairshare
from portal.tenancy import services
from portal.tenancy.models import Department, Membership, Project


class DepartmentList(generics.ListCreateAPIView):
    """GET the departments or POST a new one (cluster admins)."""

    serializer_class = DepartmentSerializer
    permission_classes = [IsClusterAdmin]
    queryset = Department.objects.prefetch_related("projects").order_by("id")

    def perform_create(self, serializer):
        serializer.instance = services.create_department(**serializer.validated_data)


class DepartmentDetail(generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH or DELETE (no projects left) one department (cluster admins)."""

    serializer_class = DepartmentSerializer
    permission_classes = [IsClusterAdmin]
    queryset = Department.objects.prefetch_related("projects")
    lookup_field = "name"
    lookup_url_kwarg = "name"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def perform_update(self, serializer):
        services.update_department(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, department):
        services.delete_department(department)


class ProjectList(generics.ListCreateAPIView):
    """GET the projects you may see; POST a new one (cluster admins)."""

    serializer_class = ProjectSerializer
    permission_classes = [ClusterAdminWrites]

    def get_queryset(self):
        return with_usage(access.projects_for(self.request.user)).select_related("department")

    def perform_create(self, serializer):
        serializer.instance = services.create_project(**serializer.validated_data)


class ProjectDetail(generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH (cluster admins; the project's admins its time limit only) or DELETE (cluster
    admins, no jobs left) one project."""

    serializer_class = ProjectSerializer
    permission_classes = [MayEditProject]
    lookup_field = "name"
    lookup_url_kwarg = "name"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def get_queryset(self):
        return with_usage(access.projects_for(self.request.user)).select_related("department")

    def get_serializer_class(self):
        """A GET also says what the project's usage over time did to its fair share (R2.9)."""
        return ProjectWithUsageSerializer if self.request.method == "GET" else ProjectSerializer

    def get_object(self):
        project = super().get_object()
        if self.request.method == "GET":
            project.fair_share_over_time = fairshare.explain(project.name).as_dict()
        return project

    def perform_update(self, serializer):
        services.update_project(serializer.instance, **serializer.validated_data)
        serializer.instance = self.get_object()  # re-read the usage figures

    def perform_destroy(self, project):
        services.delete_project(project)


class MemberList(generics.ListCreateAPIView):
    """GET a project's members (members see them); POST one (project or cluster admins)."""

    serializer_class = MembershipSerializer
    permission_classes = [IsAuthenticated, MayManageMembers]

    def project(self) -> Project:
        project = access.get_project_for(self.request.user, self.kwargs["name"])
        self.check_object_permissions(self.request, project)
        return project

    def get_queryset(self):
        return Membership.objects.filter(project=self.project()).select_related("user")

    def create(self, request, *args, **kwargs):
        project = self.project()  # 404 / 403 before the body is looked at
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = services.add_member(project, data["user"]["username"], data["role"])
        return Response(self.get_serializer(membership).data, status=status.HTTP_201_CREATED)


class MemberDetail(generics.DestroyAPIView):
    """DELETE a member from a project (project or cluster admins)."""

    serializer_class = MembershipSerializer
    permission_classes = [IsAuthenticated, MayManageMembers]

    def get_object(self) -> Membership:
        project = access.get_project_for(self.request.user, self.kwargs["name"])
        self.check_object_permissions(self.request, project)
        membership = (
            Membership.objects.filter(project=project, user__username=self.kwargs["username"])
            .select_related("user")
            .first()
        )
        if membership is None:
            raise Http404(f"{self.kwargs['username']} is not a member of {project.name}.")
        return membership

    def perform_destroy(self, membership):
        services.remove_member(membership)


class UserList(generics.ListCreateAPIView):
    """GET or POST portal accounts (cluster admins)."""

    serializer_class = UserSerializer
    permission_classes = [IsClusterAdmin]
    queryset = get_user_model().objects.order_by("id")

    def perform_create(self, serializer):
        serializer.instance = services.create_user(**serializer.validated_data)


class UserDetail(generics.RetrieveUpdateDestroyAPIView):
    """GET, PATCH (`is_active`, `is_staff`) or DELETE one account (cluster admins). Never one's
    own account, never the last active cluster admin (409); a deleted user's jobs stay."""

    serializer_class = AccountSerializer
    permission_classes = [IsClusterAdmin]
    queryset = get_user_model().objects.all()
    lookup_field = "username"
    http_method_names = ["get", "patch", "delete", "head", "options"]

    def perform_update(self, serializer):
        serializer.instance = services.update_user(
            serializer.instance, by=self.request.user, **serializer.validated_data
        )

    def perform_destroy(self, user):
        services.delete_user(user, by=self.request.user)
