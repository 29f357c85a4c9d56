"""The pages: the live overview (`/`), analytics (`/analytics/`), and sign-in/out.

Pages render their first state on the server (the overview as JSON in the page, so the first
paint needs no round trip) and the JavaScript in `static/allot/` keeps them live: the overview
over the `/ws/overview/` websocket, analytics from `/api/v1/analytics/allocation/`.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from portal import access
from portal.dashboards.overview import build_overview
from portal.scheduling.agent import get_agent
from portal.web.colours import project_colours


@login_required
def overview(request: HttpRequest) -> HttpResponse:
    """Tiles, GPUs per project, running and pending jobs and nodes, as the user may see them."""
    return render(
        request,
        "web/overview.html",
        {"overview": build_overview(request.user), "page": "overview"},
    )


@login_required
def analytics(request: HttpRequest) -> HttpResponse:
    """GPUs allocated per project over time, pending jobs and GPU utilization, with CSV."""
    return render(
        request,
        "web/analytics.html",
        {
            "page": "analytics",
            "simulated": get_agent().simulated,
            "ranges": [("1h", "1 hour"), ("24h", "24 hours"), ("7d", "7 days"), ("30d", "30 days")],
            "colours": project_colours(
                access.projects_for(request.user).values_list("name", flat=True)
            ),
        },
    )
