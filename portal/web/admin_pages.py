"""Pages for projects, members, nodes, users and the user's own account.

Who may do what is asked of `portal.access` (as the REST API does); what is valid is
decided by the API's serializers and services, so the messages next to a field are the API's.
A project the user may not see is a 404 here too.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import get_user_model, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import PasswordChangeForm
from django.core.exceptions import PermissionDenied
from django.db.models import Sum
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST
from rest_framework.exceptions import APIException, ValidationError

from agents.kubernetes.names import namespace_for
from portal import access
from portal.api.serializers.cluster import NodeSerializer, PoolTopologySerializer
from portal.api.serializers.tenancy import MembershipSerializer, ProjectSerializer, UserSerializer
from portal.api.serializers.tokens import NewTokenSerializer
from portal.api.views.notify import WebhookSerializer
from portal.cluster import services as node_services
from portal.cluster.models import Node, PoolTopology
from portal.dashboards.overview import build_overview
from portal.jobs.health import POLICY_FIELDS
from portal.jobs.queries import with_usage
from portal.notify import services as notify_services
from portal.notify.models import Delivery, Preference, Webhook
from portal.scheduling import fairshare
from portal.tenancy import services
from portal.tenancy.models import MIN_RUNTIME_FIELDS, Department, Membership, Project, Role
from portal.tenancy.queries import min_runtimes
from portal.web import budget_pages, user_limit_pages
from portal.web.forms import (
    CHECK,
    CHOICE,
    INTEGER,
    LIST,
    NUMBER,
    QUANTITY,
    SECONDS,
    TEXT,
    WEIGHTS,
    as_duration,
    field_errors,
    form_input,
)
from portal.web.templatetags.allot import quantity_cpu, quantity_memory

# time limits are read as the CLI takes them: 90m, 2h, 1d
PROJECT_FIELDS = {
    "name": TEXT, "quota": NUMBER, "over_quota_weight": NUMBER, "limit": NUMBER,
    "department": CHOICE, "node_pools": LIST, "namespaces": LIST,
    **dict.fromkeys(POLICY_FIELDS, SECONDS), "idle_threshold": NUMBER,
    **dict.fromkeys(MIN_RUNTIME_FIELDS, SECONDS), "default_cpu": QUANTITY,
    "default_memory": QUANTITY, "cpu_limit": QUANTITY, "memory_limit": QUANTITY,
    "user_fair_share": CHECK, "user_weights": WEIGHTS,
    "default_topology_required": CHOICE, "default_topology_preferred": CHOICE,
}  # fmt: skip


def _require(allowed: bool) -> None:
    if not allowed:
        raise PermissionDenied


@login_required
def projects(request: HttpRequest) -> HttpResponse:
    """Every project the user may see, with quota, weight, limit and usage."""
    rows = with_usage(access.projects_for(request.user)).order_by("name")
    return render(
        request,
        "web/projects.html",
        {"page": "projects", "projects": rows, "can_create": access.is_cluster_admin(request.user),
         "quota_warnings": quota_warnings() if access.is_cluster_admin(request.user) else []},
    )  # fmt: skip


@login_required
def project_detail(request: HttpRequest, name: str) -> HttpResponse:
    """A project's settings, members and jobs, and what its past usage did to its fair share."""
    project = access.get_project_for(request.user, name)
    usage = with_usage(access.projects_for(request.user)).get(pk=project.pk)
    return render(
        request,
        "web/project_detail.html",
        {
            "page": "projects",
            "project": usage,
            "min_runtimes": min_runtimes(project),
            "fairshare": fairshare.explain(project.name),
            "members": project.memberships.select_related("user").order_by("user__username"),
            "jobs": project.jobs.select_related("user").order_by("-submitted_at")[:200],
            "roles": Role.choices,
            "namespaces": [namespace_for(project.name), *(project.namespaces or [])],
            "can_manage": access.can_manage_members(request.user, project),
            "can_edit": access.editable_project_fields(request.user, project) != frozenset(),
            "can_delete": access.is_cluster_admin(request.user),
            "can_submit": access.can_submit(request.user, project),
            "webhooks": project.webhooks.order_by("id"),
            "budgets": budget_pages.for_project(request.user, project),
            "can_edit_budgets": access.is_cluster_admin(request.user),
            "deliveries": Delivery.objects.filter(webhook__project=project)
            .select_related("webhook")
            .order_by("-id")[:20],
            "errors": {},
            **user_limit_pages.for_project(request.user, project),
        },
    )


@login_required
def project_form(request: HttpRequest, name: str | None = None) -> HttpResponse:
    """Create (cluster admins) or edit a project; a project admin edits its time limit only."""
    project = access.get_project_for(request.user, name) if name else None
    editable = (
        access.editable_project_fields(request.user, project)
        if project
        else (None if access.is_cluster_admin(request.user) else frozenset())
    )
    _require(editable != frozenset())
    kinds = {k: v for k, v in PROJECT_FIELDS.items() if editable is None or k in editable}
    if project is not None:
        kinds.pop("name", None)
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        values, refused = request.POST, _refused_fields(request.POST, kinds)
        if refused:  # a project admin's quota: said out loud, never dropped with a "saved"
            errors, status = {"form": [f"Only cluster admins change {', '.join(refused)}: "
                                       "nothing was saved."]}, 403  # fmt: skip
        else:
            saved, errors = _save_project(request, project, kinds)
            if saved is not None:
                messages.success(request, f"Project {saved.name} saved.")
                for warning in quota_warnings(saved.name):
                    messages.warning(request, warning)
                return redirect("project-detail", name=saved.name)
            status = 400  # the form again, its errors under their fields
    elif project is not None:
        values = {
            "quota": plain(project.quota), "over_quota_weight": plain(project.over_quota_weight),
            "limit": plain(project.limit), "node_pools": ", ".join(project.node_pools or []),
            "namespaces": ", ".join(project.namespaces or []),
            "department": project.department.name if project.department else "",
            **{field: as_duration(getattr(project, field)) if kind == SECONDS
               else plain(getattr(project, field))
               for field, kind in PROJECT_FIELDS.items()
               if field in (*POLICY_FIELDS, *MIN_RUNTIME_FIELDS)},  # "0", not empty
            **_project_quantities(project),
            "user_fair_share": project.user_fair_share,
            "user_weights": "\n".join(f"{user}={weight:g}"
                                      for user, weight in project.user_weights.items()),
            "default_topology_required": project.default_topology_required,
            "default_topology_preferred": project.default_topology_preferred,
        }  # fmt: skip
    return render(
        request,
        "web/project_form.html",
        {"page": "projects", "project": project, "fields": kinds, "values": values,
         "errors": errors, "pools": sorted(set(Node.objects.values_list("pool", flat=True))),
         "departments": Department.objects.order_by("name").values_list("name", flat=True)},
        status=status,
    )  # fmt: skip


def quota_warnings(name: str | None = None) -> list[str]:
    """Quotas the cluster cannot honour (issue 24): one project's above all the cluster's GPUs
    (only `name`'s when given), or all of them together above those GPUs."""
    gpus = float(Node.objects.aggregate(total=Sum("gpus"))["total"] or 0)
    quotas = {project: float(q) for project, q in Project.objects.values_list("name", "quota")}
    warnings = [f"{project}'s quota of {quota:g} GPUs is more than the cluster's {gpus:g} GPUs: "
                "it can never be met." for project, quota in sorted(quotas.items())
                if quota > gpus and name in (None, project)]  # fmt: skip
    total = sum(quotas.values())
    if total > gpus:
        warnings.append(f"Quotas add up to {total:g} GPUs, more than the cluster's {gpus:g}: not "
                        "every project can have its quota at the same time.")  # fmt: skip
    return warnings


def _refused_fields(post, kinds: dict[str, str]) -> list[str]:
    """The project's fields a form sent that this user may not change (issue 22 item 8)."""
    return [field for field in PROJECT_FIELDS if field != "name" and field not in kinds
            and field in post]  # fmt: skip


def _save_project(request: HttpRequest, project, kinds: dict[str, str]) -> tuple[object, dict]:
    """(the project created or updated, {}) or (None, errors by field)."""
    return save_queue(request, ProjectSerializer, project, kinds,
                      services.create_project, services.update_project)  # fmt: skip


def save_queue(request, serializer_class, queue, kinds, create, update) -> tuple[object, dict]:
    """A project's or department's form saved through the API's serializer and the service's
    `create` or `update`: (the queue, {}) or (None, errors by field)."""
    data, errors = form_input(request.POST, kinds)
    if errors:
        return None, errors
    serializer = serializer_class(queue, data=data, partial=queue is not None)
    if not serializer.is_valid():
        return None, field_errors(serializer.errors)
    try:
        if queue is None:
            return create(**serializer.validated_data), {}
        update(queue, **serializer.validated_data)
        return queue, {}
    except APIException as exc:
        return None, field_errors(exc)


def _project_quantities(project: Project) -> dict[str, str]:
    """The project's CPU and memory defaults and limits as its form reads them back."""
    return {
        "default_cpu": quantity_cpu(project.default_cpu_millis),
        "default_memory": quantity_memory(project.default_memory_bytes),
        **limit_quantities(project),
    }


def limit_quantities(queue) -> dict[str, str]:
    """A project's or department's CPU and memory limits as its form reads them back."""
    return {
        "cpu_limit": quantity_cpu(queue.cpu_limit_millis),
        "memory_limit": quantity_memory(queue.memory_limit_bytes),
    }


def plain(number) -> str:
    return "" if number is None else f"{float(number):g}"


@login_required
@require_POST
def project_delete(request: HttpRequest, name: str) -> HttpResponse:
    """Delete a project without jobs (cluster admins)."""
    project = access.get_project_for(request.user, name)
    _require(access.is_cluster_admin(request.user))
    try:
        services.delete_project(project)
    except APIException as exc:
        messages.error(request, " ".join(field_errors(exc).get("name", ["cannot delete"])))
        return redirect("project-detail", name=name)
    messages.success(request, f"Project {name} deleted.")
    return redirect("projects")


@login_required
@require_POST
def member_add(request: HttpRequest, name: str) -> HttpResponse:
    """Add a member with a role (the project's admins and cluster admins)."""
    project = access.get_project_for(request.user, name)
    _require(access.can_manage_members(request.user, project))
    data, errors = form_input(request.POST, {"username": TEXT, "role": TEXT})
    serializer = MembershipSerializer(data=data)
    if not errors and serializer.is_valid():
        try:
            services.add_member(project, serializer.validated_data["user"]["username"],
                                serializer.validated_data["role"])  # fmt: skip
            messages.success(request, f"{data['username']} added as {data.get('role', '')}.")
            return redirect("project-detail", name=name)
        except APIException as exc:
            errors = field_errors(exc)
    errors = errors or field_errors(serializer.errors)
    for field, reasons in errors.items():
        messages.error(request, f"{field}: {' '.join(reasons)}")
    return redirect("project-detail", name=name)


@login_required
@require_POST
def webhook_add(request: HttpRequest, name: str) -> HttpResponse:
    """Add a webhook to the project (its admins); its signing secret is shown once."""
    project = access.get_project_for(request.user, name)
    _require(access.can_manage_members(request.user, project))
    serializer = WebhookSerializer(data={"url": request.POST.get("url", "").strip()})
    if serializer.is_valid():
        webhook = notify_services.create_webhook(project, **serializer.validated_data)
        messages.success(
            request, f"Webhook added. Its signing secret, shown once: {webhook.secret}"
        )
    else:
        reasons = field_errors(serializer.errors).get("url", [])
        messages.error(request, "url: " + " ".join(reasons))
    return redirect("project-detail", name=name)


@login_required
@require_POST
def webhook_delete(request: HttpRequest, name: str, pk: int) -> HttpResponse:
    """Remove one of the project's webhooks (its delivery log goes with it)."""
    project = access.get_project_for(request.user, name)
    _require(access.can_manage_members(request.user, project))
    webhook = Webhook.objects.filter(project=project, id=pk).first()
    if webhook is None:
        raise Http404("No such webhook.")
    notify_services.delete_webhook(webhook)
    messages.success(request, "Webhook removed.")
    return redirect("project-detail", name=name)


@login_required
@require_POST
def member_remove(request: HttpRequest, name: str, username: str) -> HttpResponse:
    """Remove a member (their jobs stay)."""
    project = access.get_project_for(request.user, name)
    _require(access.can_manage_members(request.user, project))
    membership = Membership.objects.filter(project=project, user__username=username).first()
    if membership is None:
        raise Http404(f"{username} is not a member of {name}")
    services.remove_member(membership)
    messages.success(request, f"{username} removed from {name}.")
    return redirect("project-detail", name=name)


@login_required
def nodes(request: HttpRequest) -> HttpResponse:
    """Nodes with pool, readiness, cordon and devices; cluster admins add, cordon and remove."""
    admin = access.is_cluster_admin(request.user)
    errors, values = {}, {}
    if request.method == "POST" and request.POST.get("form") == "topology":
        _require(admin)
        errors, values = _set_topology(request), request.POST
        if not errors:
            messages.success(request, f"Topology of pool {request.POST['topology_pool']} saved.")
            return redirect("nodes")
    elif request.method == "POST":
        _require(admin)
        kinds = {"name": TEXT, "gpus": INTEGER, "gpu_memory_mib": INTEGER, "pool": TEXT,
                 "cpu": TEXT, "memory": TEXT}  # fmt: skip
        data, errors = form_input(request.POST, kinds)
        values = request.POST
        serializer = NodeSerializer(data=data)
        if not errors and serializer.is_valid():
            try:
                node_services.create_node(**serializer.validated_data)
                messages.success(request, f"Node {data['name']} added.")
                return redirect("nodes")
            except APIException as exc:
                errors = field_errors(exc)
        errors = errors or field_errors(serializer.errors)
    overview = build_overview(request.user)
    return render(
        request,
        "web/nodes.html",
        {"page": "nodes", "nodes": overview["nodes"], "simulated": overview["simulated"],
         "admin": admin, "errors": errors, "values": values,
         "topologies": PoolTopology.objects.order_by("pool")},
        status=400 if errors else 200,
    )  # fmt: skip


TOPOLOGY_KINDS = {"pool": TEXT, "levels": LIST, "default_required": TEXT,
                  "default_preferred": TEXT}  # fmt: skip


def _set_topology(request: HttpRequest) -> dict[str, list[str]]:
    """A node pool's topology levels and defaults from the nodes page (R23.1; issue 38), set
    as `POST /api/v1/topology/` sets them (the same serializer and service); the errors keyed
    by the form's boxes (`topology_` and the field: the add-node form has a `pool` too), or
    none once saved."""
    kinds = {f"topology_{name}": kind for name, kind in TOPOLOGY_KINDS.items()}
    data, errors = form_input(request.POST, kinds)
    data = {name.removeprefix("topology_"): value for name, value in data.items()}
    for name in ("default_required", "default_preferred"):
        data.setdefault(name, "")  # left empty: no default
    serializer = PoolTopologySerializer(data=data)
    if errors:
        return errors
    if not serializer.is_valid():
        return {
            f"topology_{name}": reasons for name, reasons in field_errors(serializer.errors).items()
        }
    fields = dict(serializer.validated_data)
    node_services.set_pool_topology(fields.pop("pool"), **fields)
    return {}


@login_required
@require_POST
def topology_delete(request: HttpRequest, pool: str) -> HttpResponse:
    """Remove a pool's topology levels (cluster admins): its jobs then have no domains (R23.4)."""
    _require(access.is_cluster_admin(request.user))
    row = PoolTopology.objects.filter(pool=pool).first()
    if row is None:
        raise Http404(f"Pool {pool} has no topology.")
    node_services.delete_pool_topology(row)
    messages.success(request, f"Topology of pool {pool} removed.")
    return redirect("nodes")


NODE_DONE = {
    "fail": "GPU {device} of {node} marked failed: nothing is placed on it, and its jobs are "
    "moved or stopped by the next cycle.",
    "heal": "GPU {device} of {node} marked healthy again.",
    "allocatable": "Allocatable CPU and memory of {node} saved.",
}


def _change_node(node: Node, action: str, post) -> None:
    """A device marked failed or healthy, or the allocatable CPU and memory, as a PATCH of the
    node through NodeSerializer (a bad value raises its 400)."""
    if action == "allocatable":
        data, errors = form_input(post, {"cpu": QUANTITY, "memory": QUANTITY})  # empty: untracked
    else:
        data, errors = form_input(post, {"device": INTEGER})
        if "device" not in data and not errors:
            errors = {"device": ["which GPU? give its index"]}
        marked = set(node.failed_devices)
        device = data.pop("device", None)
        marked = marked | {device} if action == "fail" else marked - {device}
        data["failed_devices"] = sorted(index for index in marked if index is not None)
    if errors:
        raise ValidationError(errors)
    serializer = NodeSerializer(node, data=data, partial=True)
    serializer.is_valid(raise_exception=True)
    node_services.update_node(node, **serializer.validated_data)


@login_required
@require_POST
def node_update(request: HttpRequest, name: str) -> HttpResponse:
    """Cordon or uncordon a node, mark a device failed or healthy, set its allocatable CPU and
    memory, or remove it (cluster admins); the changes go through the API's serializer."""
    _require(access.is_cluster_admin(request.user))
    node = Node.objects.filter(name=name).first()
    if node is None:
        raise Http404(f"Node {name} not found.")
    action = request.POST.get("action")
    try:
        if action == "delete":
            node_services.delete_node(node)
            messages.success(request, f"Node {name} removed.")
        elif action in ("cordon", "uncordon"):
            node_services.update_node(node, schedulable=action == "uncordon")
            messages.success(request, f"Node {name} {action}ed.")
        elif action in ("fail", "heal", "allocatable"):
            _change_node(node, action, request.POST)
            done = NODE_DONE[action].format(node=name, device=request.POST.get("device"))
            messages.success(request, done)
        else:
            messages.error(request, f"unknown action {action!r}")
    except APIException as exc:
        reasons = [reason for group in field_errors(exc).values() for reason in group]
        messages.error(request, " ".join(reasons))
    return redirect("nodes")


@login_required
def users(request: HttpRequest) -> HttpResponse:
    """Cluster admins list users, create them and set new passwords."""
    _require(access.can_manage_users(request.user))
    errors, values = {}, {}
    if request.method == "POST":
        data, errors = form_input(
            request.POST, {"username": TEXT, "password": TEXT, "email": TEXT, "is_staff": CHECK}
        )
        values = request.POST
        serializer = UserSerializer(data=data)
        if not errors and serializer.is_valid():
            try:
                services.create_user(**serializer.validated_data)
                messages.success(request, f"User {data['username']} created.")
                return redirect("users")
            except APIException as exc:
                errors = field_errors(exc)
        errors = errors or field_errors(serializer.errors)
    people = list(
        get_user_model().objects.order_by("username").prefetch_related("memberships__project")
    )
    for person in people:  # what the page offers on each row, as portal.access says
        person.change_refused = access.why_not_change_account(request.user, person)
    context = {"page": "users", "people": people, "errors": errors, "values": values,
               "projects": list(Project.objects.order_by("name").values_list("name", flat=True)),
               "roles": Role.choices}  # fmt: skip
    return render(request, "web/users.html", context)


@login_required
@require_POST
def user_password(request: HttpRequest, username: str) -> HttpResponse:
    """A cluster admin sets a user's new password (Django's validators apply)."""
    _require(access.can_manage_users(request.user))
    person = get_user_model().objects.filter(username=username).first()
    if person is None:
        raise Http404(f"User {username} not found.")
    serializer = UserSerializer(
        data={"username": username, "password": request.POST.get("password", "")}
    )
    if serializer.is_valid():
        services.set_password(person, serializer.validated_data["password"])
        messages.success(request, f"New password set for {username}.")
    else:
        reasons = field_errors(serializer.errors).get("password", [])
        messages.error(request, f"{username}: " + " ".join(reasons))
    return redirect("users")


# the page offers these lifetimes for a new token; the API takes any (`expires_in`)
EXPIRY_CHOICES = [("", "never"), ("7d", "in 7 days"), ("30d", "in 30 days"),
                  ("90d", "in 90 days"), ("365d", "in a year")]  # fmt: skip


@login_required
def me(request: HttpRequest) -> HttpResponse:
    """The user's own page: projects and roles, API tokens (create one with a name and an
    expiry - its key is shown once -, list, revoke), notification settings, password."""
    form, token_form = PasswordChangeForm(request.user), {}
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "create-token":
            token_form = _create_token(request)
        elif action == "revoke-token":
            _revoke_token(request)
            return redirect("me")
        elif action == "notifications":
            notify_services.set_preference(
                request.user, email="email" in request.POST, browser="browser" in request.POST
            )
            messages.success(request, "Notification settings saved.")
            return redirect("me")
        elif action == "password":
            form = PasswordChangeForm(request.user, request.POST)
            if form.is_valid():
                services.set_password(request.user, form.cleaned_data["new_password1"])
                update_session_auth_hash(request, request.user)
                messages.success(request, "Password changed; your API tokens were revoked.")
                return redirect("me")
    return _my_page(request, form, token_form)


def _create_token(request: HttpRequest) -> dict:
    """A new token from the page's form (the API's rules): its key, to show once, or the form
    back with the errors next to its fields."""
    values = {key: request.POST.get(key, "") for key in ("name", "expires_in")}
    serializer = NewTokenSerializer(data={**values, "expires_in": values["expires_in"] or None})
    if not serializer.is_valid():
        return {"values": values, "errors": field_errors(serializer.errors)}
    fields = serializer.validated_data
    token, key = services.issue_token(request.user, fields["name"], fields["expires_in"])
    return {"new_key": key, "new_token": token}


def _revoke_token(request: HttpRequest) -> None:
    """Revoke one of the user's own tokens (another's, or a gone one: a message, no change)."""
    token = access.tokens_for(request.user).filter(pk=_int(request.POST.get("token"))).first()
    if token is None:
        messages.error(request, "No such token: revoked already?")
    elif services.revoke_token(token, by=request.user):
        messages.success(request, f"Token {token.name!r} revoked: clients using it now get 401.")


def _int(text) -> int | None:
    return int(text) if isinstance(text, str) and text.isdecimal() and len(text) < 19 else None


def _my_page(request: HttpRequest, form: PasswordChangeForm, token_form: dict) -> HttpResponse:
    # the page has several forms: the focus (and the scroll) stays at the top, or on a new key
    form.fields["old_password"].widget.attrs.pop("autofocus", None)
    tokens = access.tokens_for(request.user)
    roles = Membership.objects.filter(user=request.user).select_related("project")
    preference = Preference.objects.filter(user=request.user).first() or Preference()
    return render(
        request,
        "web/me.html",
        {"page": "me", "tokens": tokens, "token_form": token_form, "form": form, "roles": roles,
         "preference": preference, "expiry_choices": EXPIRY_CHOICES, "now": timezone.now(),
         "budgets": budget_pages.for_user(request.user)},
    )  # fmt: skip
