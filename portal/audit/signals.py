"""Sign-ins and Django admin edits, recorded from their signals.

Every way in (/login/, /admin/login/, POST /api/v1/auth/token/) signs in through `authenticate()`
with the request, so Django's `user_login_failed` and django-axes' `user_locked_out` cover them
all. A successful sign-in at a page sends `user_logged_in`; the token endpoint, which signs no
session in, records its own (`portal.api.views.tenancy.ObtainToken`). An edit in Django's admin
(/admin/) bypasses the services, so its LogEntry is copied here.
"""

from __future__ import annotations

from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.db.models.signals import post_save, pre_save

from portal.audit.services import record

MEMBERSHIP = "tenancy.Membership"
ADMIN_VERBS = {ADDITION: "created", CHANGE: "changed", DELETION: "deleted"}


def connect() -> None:
    """Connect the receivers (AuditConfig.ready)."""
    from axes.signals import user_locked_out

    user_logged_in.connect(signed_in, dispatch_uid="audit-signed-in")
    user_login_failed.connect(sign_in_failed, dispatch_uid="audit-sign-in-failed")
    user_locked_out.connect(locked_out, dispatch_uid="audit-locked-out")
    post_save.connect(admin_edit, sender=LogEntry, dispatch_uid="audit-admin-edit")
    # a member's role, however it changes (Django's admin, single sign-on rules, a service); by
    # name: the audit app sits beneath tenancy and imports none of its models
    pre_save.connect(remember_role, sender=MEMBERSHIP, dispatch_uid="audit-remember-role")
    post_save.connect(role_changed, sender=MEMBERSHIP, dispatch_uid="audit-role-changed")


def signed_in(sender, request, user, **kwargs) -> None:
    record("auth.login", user, actor=user, request=request, note=_via(request))


def sign_in_failed(sender, credentials, request=None, **kwargs) -> None:
    """A wrong password, an unknown account, or a try refused during a lockout."""
    username = str(credentials.get("username") or "")[:150]
    refused = getattr(request, "axes_locked_out", False) and (
        getattr(request, "axes_failures_since_start", None) is None
    )
    note = ("refused: locked out; " if refused else "") + _via(request)
    record("auth.login_failed", _account(username), label=username, username=username or "?",
           request=request, note=note)  # fmt: skip


def locked_out(sender, request, username, ip_address, **kwargs) -> None:
    """The failure that locks an account or address out (axes also sends this for each try
    refused during the lockout: those are `auth.login_failed` entries already)."""
    if getattr(request, "axes_failures_since_start", None) is None:
        return
    name = str(username or "")[:150]
    failures = request.axes_failures_since_start
    record("auth.lockout", _account(name), label=name, username=name or "?", request=request,
           note=f"locked out after {failures} failed sign-ins; {_via(request)}")  # fmt: skip


def admin_edit(sender, instance: LogEntry, created: bool, **kwargs) -> None:
    """An add, change or delete in Django's admin: `<model>.created|changed|deleted`."""
    if not created:
        return
    model = instance.content_type.model if instance.content_type_id else "object"
    verb = ADMIN_VERBS.get(instance.action_flag, "changed")
    target = (model, instance.object_id or "", instance.object_repr)
    record(f"{model}.{verb}", target, actor=instance.user,
           note=f"in Django's admin: {instance.get_change_message() or verb}"[:255])  # fmt: skip


def remember_role(sender, instance, raw=False, **kwargs) -> None:
    if instance.pk and not raw:
        rows = sender._base_manager.filter(pk=instance.pk).values_list("role", flat=True)
        instance._audit_role_before = rows.first()


def role_changed(sender, instance, created: bool, raw=False, **kwargs) -> None:
    """`membership.role_changed` with the role before and after."""
    before = getattr(instance, "_audit_role_before", None)
    if created or raw or before is None or before == instance.role:
        return
    sso = getattr(instance, "source", "") == "sso"  # at the member's own sign-in
    record("membership.role_changed", instance, changes={"role": [before, instance.role]},
           note="by a single sign-on rule" if sso else "",
           signing_in=instance.user if sso else None)  # fmt: skip
    instance._audit_role_before = instance.role


def _account(username: str):
    if not username:
        return None
    return get_user_model().objects.filter(username=username).first()


def _via(request) -> str:
    return f"via {request.path}" if getattr(request, "path", "") else ""
