"""Sharing a notebook and an admin's access to one (issue 32 item 3), each audited.

A notebook is its owner's alone (`portal.access.can_open_session`). Its owner shares it with a
teammate or the whole project, and revokes the share; a cluster or project admin who must look
inside (a stuck kernel, a support request) uses "Access server": a grant of
ALLOT_SESSIONS_ADMIN_ACCESS_S with its reason, written to the audit log and as an event of the
job, which its owner sees on the job's page. Who may do which is `portal.access`'s to say; this
module writes the rows, the events and the audit entries.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from portal.audit import services as audit
from portal.jobs.models import Job, SessionGrant
from portal.jobs.services import record_event


def live(job: Job) -> QuerySet[SessionGrant]:
    """The job's grants in force: not revoked, not expired."""
    now = timezone.now()
    return SessionGrant.objects.filter(job=job, revoked_at__isnull=True).filter(
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )


def share(job: Job, by, user=None) -> SessionGrant:
    """Share the job's notebook with `user`, or with the whole project when None (a share that
    already exists is returned as it is)."""
    with transaction.atomic():
        existing = live(job).filter(kind=SessionGrant.SHARE, user=user).first()
        if existing is not None:
            return existing
        grant = SessionGrant.objects.create(job=job, user=user, kind=SessionGrant.SHARE,
                                            granted_by=by, created_at=timezone.now())  # fmt: skip
        whom = user.get_username() if user else f"everyone of {job.project.name}"
        record_event(job, "shared", f"notebook shared with {whom} by {by.get_username()}")
        audit.record("job.session_shared", job, changes={"shared_with": [None, whom]}, actor=by)
    return grant


def revoke(grant: SessionGrant, by) -> None:
    """End a share (or an admin's access) now; its open sockets close within the recheck."""
    with transaction.atomic():
        grant.revoked_at = timezone.now()
        grant.save(update_fields=["revoked_at"])
        whom = grant.user.get_username() if grant.user else f"everyone of {grant.job.project.name}"
        record_event(grant.job, "unshared", f"{by.get_username()} ended {whom}'s access to the "
                                            "notebook")  # fmt: skip
        audit.record("job.session_unshared", grant.job, changes={"shared_with": [whom, None]},
                     actor=by)  # fmt: skip


def admin_access(job: Job, by, reason: str) -> SessionGrant:
    """An admin's access to the job's notebook for ALLOT_SESSIONS_ADMIN_ACCESS_S, with its
    reason: audited, and an event of the job that its owner sees."""
    now = timezone.now()
    until = now + timedelta(seconds=settings.ALLOT_SESSIONS_ADMIN_ACCESS_S)
    with transaction.atomic():
        grant = SessionGrant.objects.create(job=job, user=by, kind=SessionGrant.ADMIN,
                                            granted_by=by, reason=reason, created_at=now,
                                            expires_at=until)  # fmt: skip
        local = timezone.localtime(until)
        record_event(job, "accessed", f"{by.get_username()} (admin) opened this notebook until "
                                      f"{local:%H:%M %Z}: {reason}")  # fmt: skip
        audit.record("job.session_accessed", job, note=reason, actor=by)
    return grant
