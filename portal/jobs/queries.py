"""Read-side helpers over projects and their jobs, shared by the API, the overview and the pages."""

from __future__ import annotations

from django.db.models import Count, DecimalField, F, Q, QuerySet, Sum

from portal.jobs.models import HOLDING, Status
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
