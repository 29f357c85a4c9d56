"""REST endpoints for projects, their members and users."""

from __future__ import annotations

from django.contrib.auth import authenticate, get_user_model
from django.http import Http404
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.exceptions import Throttled, ValidationError
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import access
from portal.api.permissions import (
    ClusterAdminWrites,
    IsClusterAdmin,
    MayEditProject,
    MayManageMembers,
)
from portal.api.serializers.tenancy import MembershipSerializer, ProjectSerializer, UserSerializer
from portal.api.throttling import LoginThrottle, lockout_message, lockout_minutes
from portal.jobs.queries import with_usage
from portal.tenancy import services
from portal.tenancy.models import Membership, Project


class ProjectList(generics.ListCreateAPIView):
    """GET the projects you may see; POST a new one (cluster admins)."""

    serializer_class = ProjectSerializer
    permission_classes = [ClusterAdminWrites]

    def get_queryset(self):
        return with_usage(access.projects_for(self.request.user))

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
        return with_usage(access.projects_for(self.request.user))

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


class TokenRequestSerializer(serializers.Serializer):
    """A username and password, exchanged for the user's API token."""

    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False)


class ObtainToken(APIView):
    """POST a username and password: the answer is the user's API token (`allot login`).
    DELETE (signed in with the token): revoke it.

    The same token every time until it is revoked, here or on the user's page (`/me/`), which
    also replaces it; a wrong pair is a 400 that does not say which half was wrong. Signing in
    needs no credentials (a stale token in the header must not stop a login); revoking does.
    Password tries are throttled per client address, and too many failures for an account or
    from an address lock both out for a while (django-axes, as at /login/ and /admin/login/): a
    429 until then, even for the right password.
    """

    throttle_classes = [LoginThrottle]
    throttle_scope = "login"

    def get_authenticators(self):
        return [] if self._signing_in() else super().get_authenticators()

    def get_permissions(self):
        return [AllowAny()] if self._signing_in() else [IsAuthenticated()]

    def _signing_in(self) -> bool:
        # no request yet while the schema generator builds its mock one
        return getattr(self.request, "method", None) == "POST"

    @extend_schema(
        request=TokenRequestSerializer,
        responses=inline_serializer(
            "Token", {"token": serializers.CharField(), "username": serializers.CharField()}
        ),
    )
    def post(self, request) -> Response:
        data = TokenRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        user = authenticate(  # with the request: axes counts the failure and may lock out
            request,
            username=data.validated_data["username"],
            password=data.validated_data["password"],
        )
        if getattr(request, "axes_locked_out", False):
            raise Throttled(wait=lockout_minutes() * 60, detail=lockout_message())
        if user is None:
            raise ValidationError({"password": ["wrong username or password"]})
        token, _ = services.issue_token(user)
        return Response({"token": token.key, "username": user.get_username()})

    @extend_schema(request=None, responses={204: None})
    def delete(self, request) -> Response:
        services.revoke_token(request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
