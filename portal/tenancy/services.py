"""Writes to departments, projects, memberships, user accounts and their API tokens; each
change to a department or a project asks for a scheduling cycle.

The REST API, the web pages and the management commands all write through these verbs, so a
duplicate is the same 409 naming the same field through every door. What is valid (a password
strong enough, a well-formed username) is checked before, by the API's serializers, which the
pages reuse.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.audit import services as audit
from portal.core.errors import conflict
from portal.core.trigger import request_cycle_on_commit
from portal.tenancy import token_cache
from portal.tenancy.models import (
    TOKEN_PREFIX_LEN,
    ApiToken,
    Department,
    Membership,
    Project,
    UserLimit,
    new_token_key,
    token_digest,
)


def create_project(**fields) -> Project:
    """A new project; 409 when the name is taken."""
    return _create_queue(Project, **fields)


def create_department(**fields) -> Department:
    """A new department (a parent queue, R2.11); 409 when the name is taken."""
    return _create_queue(Department, **fields)


def _create_queue(model, **fields):
    kind, name = model._meta.model_name, fields["name"]
    taken = f"a {kind} named {name!r} already exists"
    try:
        with transaction.atomic():
            if model.objects.filter(name=name).exists():
                raise conflict("name", taken)
            queue = model.objects.create(**fields)
            audit.record(f"{kind}.created", queue, changes=audit.diff({}, fields))
            request_cycle_on_commit()
    except IntegrityError:
        raise conflict("name", taken) from None
    return queue


# What the audit log calls a queue's change: its GPU quota, weight and limit, or the rest
QUEUE_AUDIT = ("quota", "over_quota_weight", "limit")
PROJECT_AUDIT = {"project.quota_changed": QUEUE_AUDIT, "project.limits_changed": None}
DEPARTMENT_AUDIT = {"department.quota_changed": QUEUE_AUDIT, "department.limits_changed": None}


def update_project(project: Project, **fields) -> Project:
    """Change a project's quota, weight, limit, pools or time limit (the name stays)."""
    return _update_queue(project, PROJECT_AUDIT, **fields)


def update_department(department: Department, **fields) -> Department:
    """Change a department's quota, weight, limits or minimum run times (the name stays)."""
    return _update_queue(department, DEPARTMENT_AUDIT, **fields)


def _update_queue(queue, actions: dict, **fields):
    with transaction.atomic():
        before = audit.snapshot(queue, fields)
        for key, value in fields.items():
            setattr(queue, key, value)
        if fields:  # only the given columns: a project's `fair_share` belongs to the cycle
            queue.save(update_fields=list(fields))
            audit.record_changes(queue, before, actions)
            request_cycle_on_commit()
    return queue


def delete_project(project: Project) -> None:
    """Remove a project with no jobs (409 otherwise: delete its jobs first)."""
    with transaction.atomic():
        count = project.jobs.count()
        if count:
            raise conflict("name", f"project {project.name} still has {count} job(s)")
        audit.record("project.deleted", project)
        project.delete()
        request_cycle_on_commit()


def delete_department(department: Department) -> None:
    """Remove a department with no projects (409 otherwise: move or delete them first)."""
    with transaction.atomic():
        count = department.projects.count()
        if count:
            raise conflict("name", f"department {department.name} still has {count} project(s)")
        audit.record("department.deleted", department)
        department.delete()
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


def create_user_limit(project: Project, user=None, **limits) -> UserLimit:
    """A per-user limit of `project` (issue 36): its default with `user` None, else that user's
    override; 409 naming `user` when the project has that one already (change it instead)."""
    if user is None:
        taken = f"{project.name} has its default per-user limit already: change that one"
    else:
        taken = f"{user.get_username()} has a per-user limit in {project.name} already: change it"
    try:
        with transaction.atomic():
            if UserLimit.objects.filter(project=project, user=user).exists():
                raise conflict("user", taken)
            limit = UserLimit.objects.create(project=project, user=user, **limits)
            audit.record("user_limit.created", limit, changes=audit.diff({}, limits))
            request_cycle_on_commit()  # a job over the new limit waits from the next cycle
    except IntegrityError:
        raise conflict("user", taken) from None
    return limit


def update_user_limit(limit: UserLimit, **limits) -> UserLimit:
    """Change a per-user limit's values (whose it is stays)."""
    with transaction.atomic():
        before = audit.snapshot(limit, limits)
        for key, value in limits.items():
            setattr(limit, key, value)
        if limits:
            limit.save(update_fields=list(limits))
            audit.record_changes(limit, before, {"user_limit.changed": None})
            request_cycle_on_commit()
    return limit


def delete_user_limit(limit: UserLimit) -> None:
    """Remove a per-user limit: a user's override falls back to the default, the default to no
    limit; jobs it held start at the next cycle."""
    with transaction.atomic():
        audit.record("user_limit.deleted", limit)
        limit.delete()
        request_cycle_on_commit()


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
    """Store `user`'s new password (already checked by the caller). Saving it revokes every API
    token of theirs (`portal.tenancy.passwords`, as for any other way a password changes)."""
    with transaction.atomic():
        user.set_password(password)
        user.save(update_fields=["password"])
        audit.record("user.changed", user, changes={"password": ["(hidden)", "(new)"]})


# --- API tokens (issue 22 item 7) -------------------------------------------------------------
LAST_USED_EVERY = timedelta(minutes=1)  # `last_used` is written at most this often per token


class TokenRejected(Exception):
    """A token that signs nobody in; the message is the client's 401."""


def issue_token(
    user: AbstractBaseUser, name: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new API token for `user` and its key, which only this answer holds: the key is not
    stored (its SHA-256 is), so the caller shows it once. Every sign-in makes one; the others
    stay valid."""
    key = new_token_key()
    token = ApiToken.objects.create(user=user, name=name, prefix=key[:TOKEN_PREFIX_LEN],
                                    digest=token_digest(key), expires_at=expires_at)  # fmt: skip
    audit.record("token.created", token, changes={"expires_at": [None, expires_at]},
                 signing_in=user)  # fmt: skip
    return token, key


def revoke_token(token: ApiToken, by: AbstractBaseUser) -> bool:
    """Revoke `token` on behalf of `by` (its owner or a cluster admin): every client using it
    gets 401 from then on. False when it was revoked already (by someone else meanwhile)."""
    reason = "revoked by its owner" if by.pk == token.user_id else f"revoked by {by}"
    now = timezone.now()
    token_cache.changed()  # first: with the cache away, a 503 and nothing revoked unseen
    done = ApiToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now, revoked_reason=reason
    )
    if done:
        token.revoked_at, token.revoked_reason = now, reason
        audit.record("token.revoked", token, note=reason)
    return bool(done)


def revoke_all_tokens(user: AbstractBaseUser, reason: str) -> int:
    """Revoke every live token of `user` (a password change); how many were live."""
    live = ApiToken.objects.filter(user=user, revoked_at__isnull=True)
    token_cache.changed()  # first: with the cache away, a 503 and nothing revoked unseen
    revoked = live.update(revoked_at=timezone.now(), revoked_reason=reason)
    if revoked:
        audit.record("token.revoked", user, note=f"all {revoked} live token(s): {reason}")
    return revoked


def use_token(key: str) -> ApiToken:
    """The live token whose key is `key`, its user loaded; TokenRejected says why not. Notes
    the use, at most once a minute per token, so a busy client costs no write per request.
    The row is read once per process and kept until a token or user changes anywhere
    (`portal.tenancy.token_cache`): a revoked token is refused from the next request on."""
    digest = token_digest(key)
    generation = token_cache.generation()  # before the row: see portal.tenancy.token_cache
    token = token_cache.kept(digest, generation)
    if token is None:
        token = ApiToken.objects.select_related("user").filter(digest=digest).first()
        if token is not None:
            token_cache.keep(digest, generation, token)
    now = timezone.now()
    if token is None:
        raise TokenRejected("Invalid token.")
    if token.revoked_at is not None:
        raise TokenRejected(f"Token revoked ({token.revoked_reason}): sign in again.")
    if token.is_expired(now):
        raise TokenRejected("Token expired: sign in again.")
    if not token.user.is_active:
        raise TokenRejected("User inactive or deleted.")
    if token.last_used is None or now - token.last_used >= LAST_USED_EVERY:
        ApiToken.objects.filter(pk=token.pk).update(last_used=now)
        token.last_used = now
        token_cache.keep(digest, generation, token)
    return token


def _last_admin(user: AbstractBaseUser) -> bool:
    """Whether `user` is the only active cluster admin left (who would then be locked out)."""
    admins = get_user_model().objects.filter(is_staff=True, is_active=True)
    return user.is_staff and user.is_active and not admins.exclude(pk=user.pk).exists()


def update_user(user: AbstractBaseUser, *, by: AbstractBaseUser, is_active: bool | None = None,
                is_staff: bool | None = None) -> AbstractBaseUser:  # fmt: skip
    """Activate or deactivate an account, or make it a cluster admin or not; 409 when `by` would
    lock themselves out or leave the cluster without an active admin. A deactivated user's
    sessions and API tokens stop working at their next request; their jobs stay."""
    changes = {field: [getattr(user, field), value]
               for field, value in (("is_active", is_active), ("is_staff", is_staff))
               if value is not None and value != getattr(user, field)}  # fmt: skip
    if not changes:
        return user
    if user.pk == by.pk:
        raise conflict("username", "you cannot deactivate yourself or drop your own admin role")
    if _last_admin(user):
        raise conflict("username", f"{user.get_username()} is the last active cluster admin")
    with transaction.atomic():
        for field, (_, value) in changes.items():
            setattr(user, field, value)
        if "is_staff" in changes:
            user.is_superuser = user.is_staff  # Django's admin follows the cluster admin flag
        user.save(update_fields=[*changes, "is_superuser"])
        audit.record("user.changed", user, changes=changes)
    return user


def delete_user(user: AbstractBaseUser, *, by: AbstractBaseUser) -> None:
    """Delete an account with its memberships and tokens; its jobs stay, without an owner (their
    user shows as "-"). 409 for oneself and for the last active cluster admin."""
    if user.pk == by.pk:
        raise conflict("username", "you cannot delete your own account")
    if _last_admin(user):
        raise conflict("username", f"{user.get_username()} is the last active cluster admin")
    with transaction.atomic():
        audit.record("user.deleted", user, changes={"username": [user.get_username(), None]})
        user.delete()
