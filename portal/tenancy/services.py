"""Writes to projects and memberships; each change to a project asks for a scheduling cycle."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from portal.core.errors import conflict
from portal.core.trigger import request_cycle_on_commit
from portal.tenancy.models import Membership, Project


def create_project(**fields) -> Project:
    """A new project; 409 when the name is taken."""
    name = fields["name"]
    try:
        with transaction.atomic():
            if Project.objects.filter(name=name).exists():
                raise conflict("name", f"a project named {name!r} already exists")
            project = Project.objects.create(**fields)
            request_cycle_on_commit()
    except IntegrityError:
        raise conflict("name", f"a project named {name!r} already exists") from None
    return project


def update_project(project: Project, **fields) -> Project:
    """Change a project's quota, weight, limit, pools or time limit (the name stays)."""
    with transaction.atomic():
        for key, value in fields.items():
            setattr(project, key, value)
        if fields:  # only the given columns: `fair_share` belongs to the cycle
            project.save(update_fields=list(fields))
            request_cycle_on_commit()
    return project


def delete_project(project: Project) -> None:
    """Remove a project with no jobs (409 otherwise: delete its jobs first)."""
    with transaction.atomic():
        count = project.jobs.count()
        if count:
            raise conflict("name", f"project {project.name} still has {count} job(s)")
        project.delete()
        request_cycle_on_commit()


def add_member(project: Project, user, role: str) -> Membership:
    """Give `user` `role` in `project`; 409 when they are a member already."""
    try:
        with transaction.atomic():
            if Membership.objects.filter(project=project, user=user).exists():
                raise conflict("username", f"{user.get_username()} is already a member")
            return Membership.objects.create(project=project, user=user, role=role)
    except IntegrityError:
        raise conflict("username", f"{user.get_username()} is already a member") from None


def remove_member(membership: Membership) -> None:
    """Take a user out of a project (their jobs stay)."""
    membership.delete()
