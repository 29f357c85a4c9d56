"""The audit log's page (/audit/): cluster admins read who did what, filter it and download it.

The filters are the API's (`portal.audit.queries`), and "Download CSV" is the API's
`?format=csv` with the same filters, so the page, the API and the file always agree. Nothing here
writes: the log is append-only.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from portal import access
from portal.audit.queries import ACTIONS, FILTERS, filter_entries

PAGE_SIZE = 50


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    """The filtered log, newest first, a page at a time (cluster admins; others 403)."""
    if not access.is_cluster_admin(request.user):
        raise PermissionDenied
    entries, errors = filter_entries(request.GET)
    page = Paginator(entries, PAGE_SIZE).get_page(request.GET.get("page"))
    chosen = {name: request.GET.get(name, "").strip() for name in FILTERS}
    query = urlencode({name: value for name, value in chosen.items() if value})
    context = {
        "page": "audit", "entries": page, "errors": errors, "chosen": chosen, "query": query,
        "csv_url": f"{reverse('audit-list')}?{urlencode({'format': 'csv'})}"
                   + (f"&{query}" if query else ""),
        "actions": ACTIONS,
        "status": 400 if errors else 200,
    }  # fmt: skip
    return render(request, "web/audit.html", context, status=context["status"])
