"""Pages for budgets (issue 36): the list of the budgets one may see with what each used, left
and when it runs out (R20.1, R20.6), the cluster admins' form that creates or edits one, and
the table the project, department and user pages include.

As for projects, what is valid is decided by the API's serializer and the write is the budgets
service's, so a field's message reads the same here and in the JSON.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from portal import access
from portal.api.serializers.budgets import BudgetSerializer
from portal.budgets import services
from portal.budgets.models import Budget, Kind, Over, Window
from portal.budgets.usage import measure
from portal.core import clock
from portal.tenancy.models import Department, Project
from portal.web.forms import CHOICE, INTEGER, NUMBER, TEXT, field_errors, form_input

BUDGET_FIELDS = {
    "name": TEXT, "project": CHOICE, "department": CHOICE, "user": CHOICE, "gpu_hours": NUMBER,
    "core_hours": NUMBER, "window": CHOICE, "term_start": CHOICE, "term_end": CHOICE,
    "rolling_days": INTEGER, "kind": CHOICE, "over": CHOICE,
}  # fmt: skip


def visible(user) -> QuerySet[Budget]:
    """The budgets `user` may read (`access.budget_filter`)."""
    rows = Budget.objects.filter(access.budget_filter(user)).distinct()
    return rows.select_related("project", "department", "user").order_by("id")


def rows(budgets: QuerySet[Budget]) -> list[tuple[Budget, object]]:
    """(budget, its state now) for a page's table."""
    now = clock.now()
    return [(budget, measure(budget, now)) for budget in budgets]


def for_project(user, project: Project) -> list:
    """The project's budgets and its department's, as `user` may see them."""
    scope = Q(project=project)
    if project.department_id is not None:
        scope |= Q(department_id=project.department_id)
    return rows(visible(user).filter(scope))


def for_departments(user) -> list:
    """Every department budget `user` may see."""
    return rows(visible(user).filter(department__isnull=False))


def for_user(user) -> list:
    """The budgets that count `user`'s jobs: their own, their projects' and departments'."""
    mine = access.projects_for(user).filter(memberships__user=user)
    scope = (Q(user=user) | Q(project__in=mine, user__isnull=True)
             | Q(department__projects__in=mine))  # fmt: skip
    return rows(visible(user).filter(scope))


@login_required
def budgets(request: HttpRequest) -> HttpResponse:
    """Every budget the user may see, with what it used; cluster admins add and edit them."""
    return render(request, "web/budgets.html", {
        "page": "projects", "budgets": rows(visible(request.user)),
        "can_edit": access.is_cluster_admin(request.user),
    })  # fmt: skip


def _budget(request: HttpRequest, pk: int | None) -> Budget | None:
    """The budget (404 when there is none) once the user is a cluster admin (403)."""
    if not access.is_cluster_admin(request.user):
        raise PermissionDenied
    if pk is None:
        return None
    budget = Budget.objects.filter(pk=pk).first()
    if budget is None:
        raise Http404(f"No budget {pk}.")
    return budget


@login_required
def budget_form(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Create or edit a budget (cluster admins)."""
    budget = _budget(request, pk)
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        values = request.POST
        saved, errors = _save(request, budget)
        if saved is not None:
            messages.success(request, f"Budget {saved.name} saved.")
            return redirect("budgets")
        status = 400
    elif budget is not None:
        values = _values(budget)
    return render(request, "web/budget_form.html", {
        "page": "projects", "budget": budget, "values": values, "errors": errors,
        "projects": Project.objects.order_by("name").values_list("name", flat=True),
        "departments": Department.objects.order_by("name").values_list("name", flat=True),
        "windows": Window.choices, "kinds": Kind.choices, "overs": Over.choices,
    }, status=status)  # fmt: skip


def _save(request: HttpRequest, budget: Budget | None) -> tuple[Budget | None, dict]:
    """The form through the API's serializer and the service: (budget, {}) or (None, errors)."""
    data, errors = form_input(request.POST, BUDGET_FIELDS)
    raw = request.POST.get("thresholds", "").strip()
    try:
        data["thresholds"] = [int(part) for part in raw.replace(",", " ").split()] if raw else [
            80, 100]  # fmt: skip
    except ValueError:
        errors["thresholds"] = ["must be whole percentages separated by commas, e.g. 80, 100"]
    if errors:
        return None, errors
    serializer = BudgetSerializer(budget, data=data, partial=budget is not None)
    if not serializer.is_valid():
        return None, field_errors(serializer.errors)
    if budget is None:
        return services.create_budget(**serializer.validated_data), {}
    return services.update_budget(budget, **serializer.validated_data), {}


def plain(value) -> str:
    """A stored amount as a form shows it: 12.50 -> '12.5', None -> ''."""
    return "" if value is None else f"{value.normalize():f}"


def _values(budget: Budget) -> dict:
    """A stored budget as its form reads it back."""
    return {
        "name": budget.name, "project": budget.project.name if budget.project else "",
        "department": budget.department.name if budget.department else "",
        "user": budget.user.get_username() if budget.user else "",
        "gpu_hours": plain(budget.gpu_hours), "core_hours": plain(budget.core_hours),
        "window": budget.window, "term_start": budget.term_start or "",
        "term_end": budget.term_end or "", "rolling_days": budget.rolling_days or "",
        "kind": budget.kind, "over": budget.over,
        "thresholds": ", ".join(str(t) for t in budget.thresholds or ()),
    }  # fmt: skip


@login_required
@require_POST
def budget_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Delete a budget (cluster admins); the runs it counted stay."""
    budget = _budget(request, pk)
    services.delete_budget(budget)
    messages.success(request, f"Budget {budget.name} deleted.")
    return redirect("budgets")
