"""Writes to projects, memberships, user accounts and their API tokens; each change to a project
asks for a scheduling cycle.

The REST API, the web pages and the management commands all write through these verbs, so a
duplicate is the same 409 naming the same field through every door. What is valid (a password
strong enough, a well-formed username) is checked before, by the API's serializers, which the
pages reuse.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from rest_framework.authtoken.models import Token

from portal.audit import services as audit
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
            audit.record("project.created", project, changes=audit.diff({}, fields))
            request_cycle_on_commit()
    except IntegrityError:
        raise conflict("name", f"a project named {name!r} already exists") from None
    return project


# What the audit log calls a project's change: its GPU quota, weight and limit, or the rest
PROJECT_AUDIT = {"project.quota_changed": ("quota", "over_quota_weight", "limit"),
                 "project.limits_changed": None}  # fmt: skip


def update_project(project: Project, **fields) -> Project:
    """Change a project's quota, weight, limit, pools or time limit (the name stays)."""
    with transaction.atomic():
        before = audit.snapshot(project, fields)
        for key, value in fields.items():
            setattr(project, key, value)
        if fields:  # only the given columns: `fair_share` belongs to the cycle
            project.save(update_fields=list(fields))
            audit.record_changes(project, before, PROJECT_AUDIT)
            request_cycle_on_commit()
    return project


def delete_project(project: Project) -> None:
    """Remove a project with no jobs (409 otherwise: delete its jobs first)."""
    with transaction.atomic():
        count = project.jobs.count()
        if count:
            raise conflict("name", f"project {project.name} still has {count} job(s)")
        audit.record("project.deleted", project)
        project.delete()
        request_cycle_on_commit()


def add_member(project: Project, user, role: str) -> Membership:
    """Give `user` `role` in `project`; 409 when they are a member already."""
    try:
        with transaction.atomic():
            if Membership.objects.filter(project=project, user=user).exists():
                raise conflict("username", f"{user.get_username()} is already a member")
            membership = Membership.objects.create(project=project, user=user, role=role)
            audit.record("membership.added", membership, changes={"role": [None, role]})
            return membership
    except IntegrityError:
        raise conflict("username", f"{user.get_username()} is already a member") from None


def remove_member(membership: Membership) -> None:
    """Take a user out of a project (their jobs stay)."""
    with transaction.atomic():
        audit.record("membership.removed", membership, changes={"role": [membership.role, None]})
        membership.delete()


def create_user(
    username: str,
    password: str,
    *,
    email: str = "",
    is_staff: bool = False,
    is_superuser: bool = False,
) -> AbstractBaseUser:
    """A new portal account (`is_staff`: a cluster admin); 409 on `username` when it is taken.

    `password` is stored hashed; the caller has checked it (UserSerializer runs Django's password
    validators)."""
    users = get_user_model().objects
    taken = conflict("username", f"a user named {username!r} already exists")
    try:
        with transaction.atomic():
            if users.filter(username=username).exists():
                raise taken
            user = users.create_user(username=username, password=password, email=email,
                                     is_staff=is_staff, is_superuser=is_superuser)  # fmt: skip
            audit.record("user.created", user, changes={"email": [None, email],
                         "is_staff": [None, is_staff]})  # fmt: skip
            return user
    except IntegrityError:  # a concurrent request took the name between check and insert
        raise taken from None


def set_password(user: AbstractBaseUser, password: str) -> None:
    """Store `user`'s new password (already checked by the caller); their API token stays."""
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        audit.record("user.changed", user, changes={"password": ["(hidden)", "(new)"]})


def issue_token(user: AbstractBaseUser, *, replace: bool = False) -> tuple[Token, bool]:
    """`user`'s API token and whether it is new.

    A user has at most one token. Issuing hands out that token, making one when there is none,
    so every client that signs in (`allot login`, `manage.py issue_token`) shares it until it is
    revoked. `replace` revokes the old one first, in the same transaction: clients still using it
    get 401 from then on, and the new key is the caller's to show once.
    """
    with transaction.atomic():
        if replace:
            revoke_token(user)
        return Token.objects.get_or_create(user=user)


def revoke_token(user: AbstractBaseUser) -> bool:
    """Delete `user`'s API token (every client using it gets 401); False when there was none."""
    deleted, _ = Token.objects.filter(user=user).delete()
    return bool(deleted)
