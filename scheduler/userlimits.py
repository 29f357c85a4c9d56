"""Per-user limits inside a project (issue 36; R21.1-R21.3, docs/user-fairness.md).

A project may cap what each of its users holds at once: GPUs (R21.1), running jobs (R21.2) and
running interactive sessions (R21.3), with a project default and per-user overrides
(:class:`~scheduler.model.UserLimit`). The check runs wherever a job is about to be placed
(Session.capacity_block), so allocate, reclaim, preempt and consolidation all honour it, and a
job over its user's limit waits with a reason naming the limit. A project without user limits
costs nothing: its jobs are never counted.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import Job, Project, UserLimit, from_milli, to_milli


def effective_limit(project: Project, user: str) -> UserLimit | None:
    """The project default overlaid field by field with `user`'s override; None when the
    project has no user limits at all (R21.1-R21.3)."""
    if not project.user_limits:
        return None
    default = next((u for u in project.user_limits if u.user == ""), UserLimit())
    own = next((u for u in project.user_limits if u.user == user and user), None)
    if own is None:
        return default
    return UserLimit(
        user=user,
        max_gpus=own.max_gpus if own.max_gpus is not None else default.max_gpus,
        max_running=own.max_running if own.max_running is not None else default.max_running,
        max_interactive=(
            own.max_interactive if own.max_interactive is not None else default.max_interactive
        ),
    )


def user_limit_block(
    project: Project,
    job: Job,
    held: Sequence[int],
    job_running: bool,
    amount: int,
) -> str | None:
    """Why `job` may not start under its user's limits in its project, or None.

    `held` is what the job's user runs in the project now, [GPUs in thousandths, running jobs,
    running interactive jobs] (ClusterState.user_held: counted once per cycle and moved with
    every placement, so jobs evicted in this cycle no longer count); `job_running` says whether
    the job itself is among them; `amount` is the job's GPUs in thousandths as the project limit
    counts them (R3.4). The job itself is never counted, so a running job being replaced by
    consolidation is checked as if it started afresh."""
    limit = effective_limit(project, job.user)
    if limit is None:
        return None
    gpus_held, count, sessions = held
    if job_running:
        gpus_held -= job.milli_total
        count -= 1
        sessions -= not job.preemptible
    who = f"{job.user or 'the anonymous user'}'s"
    if limit.max_gpus is not None and gpus_held + amount > to_milli(limit.max_gpus):
        return (
            f"over user limit: would exceed {who} per-user GPU limit of "
            f"{_gpus(to_milli(limit.max_gpus))} in {project.name}: {_gpus(gpus_held)} in use + "
            f"{_gpus(amount)} requested (R21.1)"
        )
    if limit.max_running is not None and count + 1 > limit.max_running:
        return (
            f"over user limit: would exceed {who} running-jobs limit of {limit.max_running} "
            f"in {project.name}: {count} running (R21.2)"
        )
    if (
        not job.preemptible
        and limit.max_interactive is not None
        and sessions + 1 > limit.max_interactive
    ):
        return (
            f"over user limit: would exceed {who} interactive-sessions limit of "
            f"{limit.max_interactive} in {project.name}: {sessions} running (R21.3)"
        )
    return None


def _gpus(milli: int) -> str:
    """Thousandths of a GPU in words, as the other limit reasons spell them."""
    value = from_milli(milli)
    return f"{value:g} GPU" if value <= 1 else f"{value:g} GPUs"
