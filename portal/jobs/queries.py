"""Read-side helpers over projects and their jobs, shared by the API, the overview and the pages."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from django.db.models import Count, DecimalField, F, Q, QuerySet, Sum
from django.utils import timezone

from portal.core.moments import in_utc
from portal.jobs.models import HOLDING, Job, JobType, Status
from portal.tenancy.models import Project


def with_usage(projects: QuerySet[Project]) -> QuerySet[Project]:
    """Projects annotated with GPUs allocated (`allocated`) and jobs `running` and `pending`.

    Running counts every job holding GPUs (ContainerCreating or Running).
    """
    held = Q(jobs__status__in=HOLDING)
    return projects.annotate(
        allocated=Sum(
            F("jobs__gpus") * F("jobs__pods"),
            filter=held,
            output_field=DecimalField(max_digits=14, decimal_places=2),
        ),
        running=Count("jobs", filter=held),
        pending=Count("jobs", filter=Q(jobs__status=Status.PENDING)),
    ).order_by("id")


ACTIVE_STATUSES = (Status.PENDING, *HOLDING, Status.STOPPED)  # `allot list` without --all
HISTORY_FILTERS = ("project", "status", "type", "user", "since", "until")


def history(jobs: QuerySet[Job], params) -> tuple[QuerySet[Job], dict[str, list[str]]]:
    """`jobs` narrowed by the history filters of the API, the jobs page and `allot list --all`.

    `project`, `user` (a username) and `type` match exactly; `status` is one status or several
    separated by commas; `since` and `until` (ISO 8601: a date, or a date and time; without a
    zone, the portal's) bound the submission time, `until` exclusive, a bare date meaning that
    whole day. Returns the narrowed jobs and the errors by field (empty when all is well).
    """
    errors: dict[str, list[str]] = {}
    if params.get("project"):
        jobs = jobs.filter(project__name=params["project"])
    if params.get("user"):
        jobs = jobs.filter(user__username=params["user"])
    if params.get("type"):
        if params["type"] not in JobType.values:
            errors["type"] = [
                f"unknown type {params['type']!r}; one of {', '.join(JobType.values)}"
            ]
        jobs = jobs.filter(type=params["type"])
    if params.get("status"):
        wanted = [value.strip() for value in params["status"].split(",") if value.strip()]
        unknown = [value for value in wanted if value not in Status.values]
        if unknown:
            errors["status"] = [f"unknown status {unknown[0][:40]!r}; one or more, "
                                f"comma-separated, of {', '.join(Status.values)}"]  # fmt: skip
        jobs = jobs.filter(status__in=wanted)
    for field, lookup in (("since", "submitted_at__gte"), ("until", "submitted_at__lt")):
        if params.get(field):
            moment, error = _moment(params[field], end=field == "until")
            if error:
                errors[field] = [error]
            else:
                jobs = jobs.filter(**{lookup: moment})
    return jobs, errors


def _moment(raw: str, end: bool) -> tuple[datetime | None, str]:
    """An ISO 8601 date or date-time as an aware datetime; a bare date is its midnight (the next
    day's for an `until`, so that day is included)."""
    text = raw.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            moment = datetime.combine(day + timedelta(days=1 if end else 0), time.min)
        else:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except OverflowError:  # the day after 9999-12-31: no end at all
        moment = datetime.max
    except ValueError:
        return None, f"{raw[:40]!r} is not a date (2026-11-25) or a date and time " \
                     "(2026-11-25T12:04, 2026-11-25T12:04:00Z)"  # fmt: skip
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return in_utc(moment), ""
