"""`POST /api/v1/what-if/` (issue 37): what a list of changes would do, before making it.
Cluster admins only (`portal.access.may_preview_changes`); it changes nothing."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal import access
from portal.api.serializers.whatif import WhatIfRequestSerializer, WhatIfSerializer
from portal.scheduling import whatif


class MayPreview(BasePermission):
    message = "Only cluster admins may preview changes to the cluster."

    def has_permission(self, request, view) -> bool:
        return access.may_preview_changes(request.user)


class WhatIf(APIView):
    """POST `{"changes": [{"kind": "quota", "project": "team-a", "quota": 8},
    {"kind": "drain", "node": "node-3"}], "hours": 6}`: each project's expected start of its
    pending work without and with the changes, GPUs per project over the hours (both) and the
    running jobs the changes would stop now. Reads today's state as a cycle does; writes
    nothing."""

    permission_classes = [IsAuthenticated, MayPreview]

    @extend_schema(request=WhatIfRequestSerializer, responses=WhatIfSerializer)
    def post(self, request) -> Response:
        data = WhatIfRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = whatif.preview(data.changes_made(), data.validated_data["hours"])
        except ValueError as exc:  # a node or project gone between the check and the read
            raise serializers.ValidationError({"changes": [str(exc)]}) from None
        return Response(WhatIfSerializer(whatif.answer(result)).data)
