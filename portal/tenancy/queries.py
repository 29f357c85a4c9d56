"""Read-side helpers over projects shared by the API and the project page (their jobs' usage:
`portal.jobs.queries`)."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from portal.tenancy.models import Project


@dataclass(frozen=True)
class MinRuntime:
    """One minimum run time before eviction in force (R7.4): seconds (-1 never, 0 none) and
    where it comes from ("project", "department NAME" or "cluster default")."""

    seconds: float
    source: str


@dataclass(frozen=True)
class MinRuntimes:
    """A project's minimum run times in force, as the scheduler resolves them (R7.4).

    `reclaim` protects its jobs from the projects of its own level (its sibling projects, or
    every other project when it has no department); `reclaim_across` from other departments'
    projects, for which the scheduler reads the department's value and not the project's (KAI's
    lowest-common-ancestor rule); None when `reclaim` already says it (the project has no
    department, or sets no value of its own). `preempt` protects them from the project's own
    higher-priority jobs."""

    reclaim: MinRuntime
    reclaim_across: MinRuntime | None
    preempt: MinRuntime


def min_runtimes(project: Project) -> MinRuntimes:
    """The minimum run times in force for `project`'s jobs and where each comes from: its own
    setting, else its department's, else the cluster default (`ALLOT_*_MIN_RUNTIME`)."""
    department = project.department

    def in_force(field: str, default: float, own: bool = True) -> MinRuntime:
        if own and getattr(project, field) is not None:
            return MinRuntime(getattr(project, field), "project")
        if department is not None and getattr(department, field) is not None:
            return MinRuntime(getattr(department, field), f"department {department.name}")
        return MinRuntime(default, "cluster default")

    reclaim_default = settings.ALLOT_RECLAIM_MIN_RUNTIME
    reclaim = in_force("reclaim_min_runtime_s", reclaim_default)
    across = None
    if department is not None and project.reclaim_min_runtime_s is not None:
        across = in_force("reclaim_min_runtime_s", reclaim_default, own=False)
    return MinRuntimes(
        reclaim, across, in_force("preempt_min_runtime_s", settings.ALLOT_PREEMPT_MIN_RUNTIME)
    )
