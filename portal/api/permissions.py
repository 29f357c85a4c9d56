"""DRF permission classes; each one asks `portal.access`, which holds the rules.

Object permissions run after the lookup, so a user who may not see an object gets the
lookup's 404 before any 403 could tell them it exists.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from portal import access


class IsClusterAdmin(BasePermission):
    """Only cluster admins (users, scheduler cycles)."""

    message = "Only cluster admins may do this."

    def has_permission(self, request, view) -> bool:
        return access.is_cluster_admin(request.user)


class ClusterAdminWrites(BasePermission):
    """Signed-in users read; only cluster admins create (list endpoints) or change (objects)."""

    message = "Only cluster admins may change this."

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            return False
        if request.method in SAFE_METHODS or getattr(view, "lookup_url_kwarg", None):
            return True  # detail views decide in has_object_permission, after the 404 check
        return access.is_cluster_admin(request.user)

    def has_object_permission(self, request, view, obj) -> bool:
        return request.method in SAFE_METHODS or access.is_cluster_admin(request.user)


class MayEditProject(BasePermission):
    """Cluster admins change projects; a project's admins change only its time limit."""

    message = "Only cluster admins may change this."

    def has_permission(self, request, view) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request, view, project) -> bool:
        if request.method in SAFE_METHODS:
            return True
        allowed = access.editable_project_fields(request.user, project)
        if allowed is None:
            return True
        if request.method != "PATCH" or not allowed:
            return False
        asked = set(request.data) if isinstance(request.data, dict) else set()
        refused = sorted(asked - allowed)
        if refused:
            self.message = (
                f"Project admins may change only {', '.join(sorted(allowed))}; "
                f"not {', '.join(refused)}."
            )
            return False
        return True


class MayManageMembers(BasePermission):
    """Project admins and cluster admins change a project's members; members read them."""

    message = "Only the project's admins may change its members."

    def has_object_permission(self, request, view, project) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return access.can_manage_members(request.user, project)


class MayChangeJob(BasePermission):
    """A job's owner, its project's admins and cluster admins stop, resume, delete and extend it
    and open its shell (issue 32 item 3); the project's other members read it."""

    message = "Only the job's owner and the project's admins may change it."

    def has_object_permission(self, request, view, job) -> bool:
        if request.method in SAFE_METHODS:
            return True
        return access.can_change_job(request.user, job)
