"""`/api/v1/jobs/{project}/{name}/shares/` and `.../access/`: a notebook is its owner's alone
unless shared; an admin's access is audited and shown to the owner (issue 32 item 3)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import access
from portal.api.serializers.sharing import (
    AccessGrantedSerializer,
    AccessSerializer,
    NewShareSerializer,
    SessionGrantSerializer,
)
from portal.api.views.jobs import JobMixin
from portal.jobs import grants
from portal.jobs.models import SessionGrant
from portal.scheduling.agent import session_address


class JobShares(JobMixin, generics.ListAPIView):
    """GET who besides its owner may open the job's notebook (shares and admins' accesses in
    force); POST `{"username": ...}` or `{"everyone": true}` shares it (its owner only; with a
    researcher or admin of the project)."""

    serializer_class = SessionGrantSerializer
    permission_classes = [IsAuthenticated]
    pagination_class = None

    def get_queryset(self):
        return grants.live(self.job()).select_related("user", "granted_by").order_by("id")

    @extend_schema(request=NewShareSerializer, responses={201: SessionGrantSerializer})
    def post(self, request, project: str, name: str) -> Response:
        job = self.job()
        if not access.can_share_session(request.user, job):
            raise PermissionDenied("Only the notebook's owner shares it.")
        body = NewShareSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user = None
        if not body.validated_data.get("everyone"):
            username = body.validated_data["username"]
            member = access.shareable_with(job).filter(user__username=username).first()
            if member is None:
                if not get_user_model().objects.filter(username=username).exists():
                    raise NotFound({"username": [f"no user {username!r}"]})
                raise ValidationError({"username": [
                    f"{username} is not a researcher or admin of {project}: a notebook is "
                    "shared with those only"]})  # fmt: skip
            user = member.user
        grant = grants.share(job, request.user, user)
        return Response(SessionGrantSerializer(grant).data, status=status.HTTP_201_CREATED)


class JobShare(JobMixin, APIView):
    """DELETE ends a share (its owner only); open kernel sockets close within seconds."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={204: None})
    def delete(self, request, project: str, name: str, grant: int) -> Response:
        job = self.job()
        if not access.can_share_session(request.user, job):
            raise PermissionDenied("Only the notebook's owner ends its shares.")
        found = grants.live(job).filter(pk=grant, kind=SessionGrant.SHARE).first()
        if found is None:
            raise NotFound("No such share.")
        grants.revoke(found, request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class JobAccess(JobMixin, APIView):
    """POST `{"reason": ...}`: a cluster or project admin opens another's notebook for
    ALLOT_SESSIONS_ADMIN_ACCESS_S; audited, and an event of the job its owner sees."""

    permission_classes = [IsAuthenticated]

    @extend_schema(request=AccessSerializer, responses={201: AccessGrantedSerializer})
    def post(self, request, project: str, name: str) -> Response:
        job = self.job()
        if not access.can_access_server(request.user, job):
            raise PermissionDenied("Only cluster and project admins access another's notebook.")
        body = AccessSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        grant = grants.admin_access(job, request.user, body.validated_data["reason"])
        answer = {"url": session_address(job, "lab"), "expires_at": grant.expires_at}
        return Response(AccessGrantedSerializer(answer).data, status=status.HTTP_201_CREATED)
