"""REST endpoints for persistent workspaces (issue 23): the projects in which you have one, and
deleting one (`portal.scheduling.workspaces`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.scheduling import workspaces


class WorkspaceSerializer(serializers.Serializer):
    """A user's workspace in a project: the home of their Jupyter sessions there."""

    project = serializers.CharField(help_text="the project the workspace belongs to")
    user = serializers.CharField(help_text="its owner")


class MyWorkspaces(APIView):
    """GET your persistent workspaces: one per project in which you have launched Jupyter, kept
    between sessions until you delete it."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: WorkspaceSerializer(many=True)})
    def get(self, request) -> Response:
        username = request.user.get_username()
        rows = [{"project": project, "user": username}
                for project in workspaces.workspace_projects(username)]  # fmt: skip
        return Response(WorkspaceSerializer(rows, many=True).data)


class WorkspaceDetail(APIView):
    """DELETE a user's workspace in a project and every file in it (yours, or anyone's for a
    cluster admin): 204; 404 when there is none; 409 while a Jupyter job of theirs in the
    project holds GPUs (stop it first). Nothing asks again: this is the confirmed action."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={204: None})
    def delete(self, request, project: str, username: str) -> Response:
        workspaces.delete_workspace(request.user, project, username)
        return Response(status=status.HTTP_204_NO_CONTENT)
