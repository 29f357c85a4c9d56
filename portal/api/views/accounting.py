"""GPU-hour accounting over REST (issue 23): `GET /api/v1/accounting/`.

Cluster admins see every team; others see the projects they are members of
(`portal.access.runs_for`). `?format=csv` streams the same figures as CSV, one row per period
and group and a `total` row per group.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator, Iterable, Iterator

from django.core.handlers.asgi import ASGIRequest
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from portal.api.fields import DATE_OR_TIME, refuse_empty
from portal.api.serializers.accounting import AccountingSerializer
from portal.api.views.jobs import CSVRenderer
from portal.core import clock, csvcells
from portal.dashboards import accounting
from portal.dashboards.accounting import Report

PARAMETERS = [
    OpenApiParameter("group_by", str, enum=list(accounting.GROUPS),
                     description="project (default), department or user"),
    OpenApiParameter("period", str, enum=list(accounting.PERIODS),
                     description="day (default) or month, from midnight in the portal's zone"),
    OpenApiParameter("since", DATE_OR_TIME, description="a date or a time (default: 7 days or 3 "
                     f"months back, whole periods); before until, at most {accounting.MAX_DAYS} "
                     "days before it"),
    OpenApiParameter("until", DATE_OR_TIME, description="a date (that day included) or a time, "
                     "exclusive (default: now)"),
    OpenApiParameter("project", str, description="only this project (one you may see; another "
                     "is a 404 naming it)"),
    OpenApiParameter("user", str, description="only this user's runs (a username)"),
]  # fmt: skip


class Accounting(APIView):
    """GET GPU-hours allocated, used (utilization-weighted where measured) and over quota, per
    project, department or user and per day or month, computed from the jobs' runs; with each
    group's totals. `?format=csv` downloads the same figures."""

    permission_classes = [IsAuthenticated]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]

    @extend_schema(
        parameters=PARAMETERS,
        responses={
            (200, "application/json"): AccountingSerializer,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="?format=csv: a "
                                               "row per period and group, a total row per group"),
        },
    )  # fmt: skip
    def get(self, request):
        report = report_for(request.user, request.query_params)
        if request.accepted_renderer.format == "csv":
            return csv_response(report, isinstance(request._request, ASGIRequest))
        return Response(report.as_dict())


def report_for(user, params) -> Report:
    """The report `params` ask for, over what `user` may see; a bad parameter is a 400, a project
    the user may not see (or that does not exist) a 404 naming it."""
    refuse_empty(params, ("since", "until"), "a date or a date and time")
    refuse_empty(params, ("group_by", "period"), "one of the values the schema lists")
    report, errors = accounting.for_user(user, params, clock.now())
    if set(errors) == {"project"}:  # well formed, but no project this user may see
        raise NotFound(errors)
    if errors:
        raise ValidationError(errors)
    return report


def _lines(rows: Iterable[list]) -> Iterator[str]:
    for row in rows:
        buffer = io.StringIO()
        csvcells.writer(buffer).writerow(row)
        yield buffer.getvalue()


async def _alines(rows: Iterable[list]) -> AsyncIterator[str]:
    for line in _lines(rows):  # computed already: nothing here touches the database
        yield line


def csv_response(report: Report, asgi: bool) -> StreamingHttpResponse:
    """The report as CSV, streamed a row at a time (an asynchronous stream under ASGI)."""
    rows = list(report.csv_rows())
    response = StreamingHttpResponse(_alines(rows) if asgi else _lines(rows),
                                     content_type="text/csv")  # fmt: skip
    q = report.query
    name = f"allot-accounting-{q.group_by}-{q.period}-{q.since:%Y%m%d}-{q.until:%Y%m%d}.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
