"""Pages for departments (parent queues, R2.11), cluster admins only: the list, the form that
creates or edits one - GPU quota, weight and limit, minimum run times and the CPU and memory
limits all its projects share (issue 26) - and deletion once no project is left.

As for projects (`admin_pages`), what is valid is decided by the API's serializer and the write
is the tenancy service's, so a field's message reads the same here and in the JSON.
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException

from portal import access
from portal.api.serializers.tenancy import DepartmentSerializer
from portal.jobs.models import HOLDING, Job
from portal.tenancy import services
from portal.tenancy.models import MIN_RUNTIME_FIELDS, Department
from portal.web import budget_pages
from portal.web.admin_pages import limit_quantities, plain, save_queue
from portal.web.forms import NUMBER, QUANTITY, SECONDS, TEXT, as_duration, field_errors

DEPARTMENT_FIELDS = {
    "name": TEXT, "quota": NUMBER, "over_quota_weight": NUMBER, "limit": NUMBER,
    "cpu_limit": QUANTITY, "memory_limit": QUANTITY, **dict.fromkeys(MIN_RUNTIME_FIELDS, SECONDS),
}  # fmt: skip


def _department(request: HttpRequest, name: str | None) -> Department | None:
    """The named department (404 when there is none) once the user is a cluster admin (403)."""
    if not access.is_cluster_admin(request.user):
        raise PermissionDenied
    if name is None:
        return None
    department = Department.objects.filter(name=name).first()
    if department is None:
        raise Http404(f"No department named {name!r}.")
    return department


@login_required
def departments(request: HttpRequest) -> HttpResponse:
    """Every department with its quota, its projects and its CPU and memory limits beside what
    its projects' running jobs hold (cluster admins)."""
    _department(request, None)
    rows = list(Department.objects.prefetch_related("projects").order_by("name"))
    held = _held()
    for row in rows:
        row.held_cpu_millis, row.held_memory_bytes, row.held_gpus = held.get(row.pk, (0, 0, 0.0))
        row.fair_share = sum(project.fair_share for project in row.projects.all())  # R2.11
    return render(request, "web/departments.html", {
        "page": "projects", "departments": rows,
        "budgets": budget_pages.for_departments(request.user),
    })  # fmt: skip


def _held() -> dict[int, tuple[int, int, float]]:
    """Department id -> (millicores, bytes, GPUs) the placed pods of its projects' jobs request
    and hold, as the core counts them against its limits (R3.1)."""
    held: dict[int, list] = defaultdict(lambda: [0, 0, 0.0])
    jobs = Job.objects.filter(status__in=HOLDING, project__department__isnull=False).values_list(
        "project__department_id", "cpu_millis", "memory_bytes", "placement", "gpus", "pods"
    )
    for department, cpu, memory, placement, gpus, pods in jobs:
        placed = len(placement or ())
        held[department][0] += cpu * placed
        held[department][1] += memory * placed
        held[department][2] += float(gpus) * pods
    return {pk: (cpu, memory, gpus) for pk, (cpu, memory, gpus) in held.items()}


@login_required
def department_form(request: HttpRequest, name: str | None = None) -> HttpResponse:
    """Create or edit a department (cluster admins)."""
    department = _department(request, name)
    kinds = {k: v for k, v in DEPARTMENT_FIELDS.items() if department is None or k != "name"}
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        values = request.POST
        saved, errors = save_queue(
            request, DepartmentSerializer, department, kinds, services.create_department,
            services.update_department,
        )  # fmt: skip
        if saved is not None:
            messages.success(request, f"Department {saved.name} saved.")
            return redirect("departments")
        status = 400
    elif department is not None:
        values = {
            "quota": plain(department.quota), "limit": plain(department.limit),
            "over_quota_weight": plain(department.over_quota_weight),
            **{field: as_duration(getattr(department, field)) for field in MIN_RUNTIME_FIELDS},
            **limit_quantities(department),
        }  # fmt: skip
    return render(
        request,
        "web/department_form.html",
        {"page": "projects", "department": department, "fields": kinds, "values": values,
         "errors": errors},
        status=status,
    )  # fmt: skip


@login_required
@require_POST
def department_delete(request: HttpRequest, name: str) -> HttpResponse:
    """Delete a department without projects (cluster admins)."""
    department = _department(request, name)
    try:
        services.delete_department(department)
    except APIException as exc:
        messages.error(request, " ".join(field_errors(exc).get("name", ["cannot delete"])))
        return redirect("departments")
    messages.success(request, f"Department {name} deleted.")
    return redirect("departments")
