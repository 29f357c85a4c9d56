"""The audit log over REST (issue 22): cluster admins read it, nobody writes it.

`GET /api/v1/audit/` lists entries newest first, paginated, with the filters of
`portal.audit.queries`; `?format=csv` streams every matching entry as CSV (no pagination).
There is no POST, PUT, PATCH or DELETE: 405.
"""

from __future__ import annotations

from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.exceptions import ValidationError
from rest_framework.settings import api_settings

from portal.api.fields import DATE_OR_TIME, IP_ADDRESS, refuse_empty
from portal.api.permissions import IsClusterAdmin
from portal.api.serializers.audit import AuditEntrySerializer
from portal.api.views.jobs import CSVRenderer
from portal.audit.queries import acsv_lines, csv_lines, filter_entries

FILTER_PARAMETERS = [
    OpenApiParameter("actor", str, description="username (exact); `system` for tasks"),
    OpenApiParameter("action", str, description="action code prefix, e.g. `job.` or `auth.login`"),
    OpenApiParameter("target", str, description="text in the target's label (any case)"),
    OpenApiParameter("target_type", str, description="project, job, user, node, membership, ..."),
    OpenApiParameter("since", DATE_OR_TIME, description="a time or date (UTC without an offset)"),
    OpenApiParameter("until", DATE_OR_TIME, description="a time or date (a date: its end)"),
    OpenApiParameter("address", IP_ADDRESS, description="client IP address (exact)"),
]


class AuditList(generics.ListAPIView):
    """GET the audit log (cluster admins): who did what, when, from which address, and what
    changed (before -> after). Filter with `actor`, `action` (prefix), `target`, `target_type`,
    `since`, `until` and `address`; `?format=csv` downloads every matching entry as CSV."""

    serializer_class = AuditEntrySerializer
    permission_classes = [IsClusterAdmin]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]
    http_method_names = ["get", "head", "options"]

    def get_queryset(self):
        params = self.request.query_params
        refuse_empty(params, ("since", "until"), "a date or a date and time")
        refuse_empty(params, ("address",), "an IP address")
        entries, errors = filter_entries(params)
        if errors:
            raise ValidationError(errors)
        return entries

    @extend_schema(parameters=FILTER_PARAMETERS)
    def get(self, request, *args, **kwargs):
        if request.accepted_renderer.format == "csv":
            return self.csv(request)
        return super().get(request, *args, **kwargs)

    def csv(self, request) -> StreamingHttpResponse:
        """Every matching entry, streamed a chunk of rows at a time (no pages: `page` and
        `page_size` are only checked, as the schema documents them for both answers)."""
        self.paginator.get_page_size(request)
        self.paginator.get_page_number(request, None)
        entries = self.get_queryset()
        lines = acsv_lines(entries) if isinstance(request._request, ASGIRequest) else None
        response = StreamingHttpResponse(
            lines if lines is not None else csv_lines(entries), content_type="text/csv"
        )
        stamp = timezone.now().strftime("%Y%m%dT%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="allot-audit-{stamp}.csv"'
        return response
