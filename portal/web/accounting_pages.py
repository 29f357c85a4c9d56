"""The GPU-hour accounting page (/accounting/, issue 23): cluster admins see every team, others
their own projects. The figures are the API's (`portal.dashboards.accounting.for_user`), drawn
with plotly from the page's JSON and listed in a table; "Download CSV" is the API's
`?format=csv` with the same parameters, so the page, the API and the file always agree.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from portal import access
from portal.core import clock
from portal.dashboards import accounting
from portal.web.colours import project_colours

FIELDS = ("group_by", "period", "since", "until", "project", "user")
LABELS = {"project": "Project", "department": "Department", "user": "User"}
NONE = {"project": "-", "department": "(no department)", "user": "(no user)"}


@login_required
def accounting_page(request: HttpRequest) -> HttpResponse:
    """GPU-hours allocated, used and over quota per group, with a chart and the totals; core-hours
    and memory GiB-hours beside them when runs held CPU or memory (issue 26)."""
    report, errors = accounting.for_user(request.user, request.GET, clock.now())
    chosen = {name: request.GET.get(name, "").strip() for name in FIELDS}
    query = urlencode({name: value for name, value in chosen.items() if value})
    data = report.as_dict() if report else None
    total = data["total"] if data else {}
    resources = bool(total.get("allocated_core_hours") or total.get("allocated_memory_gib_hours"))
    group = report.query.group_by if report else (chosen["group_by"] or "project")
    context = {
        "page": "accounting", "errors": errors, "chosen": chosen, "data": data,
        "group": group, "group_label": LABELS.get(group, group), "none": NONE.get(group, "-"),
        "totals": [(row.get(group), row) for row in data["totals"]] if data else [],
        "rows": [(row.get(group), row) for row in data["rows"]] if data else [],
        "projects": access.projects_for(request.user).order_by("name")
                          .values_list("name", flat=True),
        "groups": accounting.GROUPS, "periods": accounting.PERIODS,
        "csv_url": f"{reverse('accounting-report')}?{query + '&' if query else ''}format=csv",
        "admin": access.is_cluster_admin(request.user), "resources": resources,
        "colours": project_colours(access.projects_for(request.user).values_list("name",
                                                                                 flat=True)),
    }  # fmt: skip
    return render(request, "web/accounting.html", context, status=400 if errors else 200)
