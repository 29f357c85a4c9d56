"""Budgets in the core (Allot's R20 rules, docs/budgets.md): what a spent hard budget does.

The portal measures every budget from the runs and hands the core its verdict per job as plain
data (`Job.budget_hold`, `Job.over_budget`); the core never counts GPU-hours itself. Rules:

- R20.2: a pending job whose `budget_hold` is set waits with that reason; no action places it,
  and nothing is evicted or moved for it.
- R20.3: a pending job whose `over_budget` is set starts only on idle capacity (allocate); it is
  not the beneficiary of consolidation, reclaim or preemption. Interactive jobs are never
  preemptible (R7.2), so an interactive job past such a budget waits instead.
- R20.4: a running job whose `over_budget` is set is over-quota preemptible work: any pending
  job within its budgets may evict it, newest first, whatever the fair shares
  (scheduler/actions/budget.py).
"""

from __future__ import annotations

from .model import Job, JobKey


def budget_block(job: Job) -> str | None:
    """Why a spent budget keeps the job from being placed now (R20.2, R20.3), or None."""
    if job.budget_hold:
        return f"{job.budget_hold} (R20.2)"
    if job.over_budget and not job.preemptible:
        return (
            f"{job.over_budget}; an interactive job cannot run as preemptible over-quota work "
            "(R20.3)"
        )
    return None


def over_budget_keys(jobs: list[Job]) -> set[JobKey]:
    """The jobs that run, or would run, only as preemptible over-quota work (R20.3)."""
    return {job.key for job in jobs if job.over_budget}
