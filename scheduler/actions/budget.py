"""Taking GPUs back from work past its budget (R20.4, docs/budgets.md).

A job past a hard budget that lets its jobs run as preemptible over-quota work holds GPUs only
while nobody within budget needs them: a pending job within its budgets evicts such jobs, the
newest first, whatever the projects' fair shares, before reclaim (R9) and preemption (R10) look
at anyone else's work.
"""

from __future__ import annotations

from ..model import Job
from ..ordering import JobQueues
from ..placement import place_job
from ..resources import unplaceable
from ..session import Session, nodes_of
from .eviction import Outcome
from .signatures import FailedJobs


def reclaim_over_budget(session: Session) -> None:
    """Pending jobs within budget, in allocation order (R4.1-R4.3), evict running over-budget
    jobs (R20.4); every usual check on the pending job stays (limits, quota of interactive
    jobs, R3), and the eviction search is the shared one (R8.2-R8.5)."""
    candidates = [job for job in session.pending() if not job.over_budget]
    if not candidates or not _over_budget_running(session):
        return
    queue = JobQueues(session.queues, candidates, session.total)
    failed = FailedJobs()
    while (job := queue.pop()) is not None:
        if failed.skip(job) or session.capacity_block(job) or unplaceable(session, job):
            continue
        victims = _over_budget_running(session)
        if not victims:
            return
        outcome = _evict_until_it_fits(session, job, victims)
        if outcome is None:
            failed.add(job)
            continue
        for victim in outcome.evicted:
            session.record(
                "evict", victim, "budget", evicted_reason(job, victim), beneficiary=job.key
            )
        session.record(
            "start",
            job,
            "budget",
            f"started on {nodes_of(outcome.placement)}: took GPUs from work past its budget "
            "(R20.4)",
            outcome.placement,
        )


def _evict_until_it_fits(session: Session, job: Job, victims: list[Job]) -> Outcome | None:
    """Unplace victims one by one until `job` fits; leave that applied and return it, or roll
    back and return None (R20.4, with the state's checkpoint as every eviction search)."""
    state = session.state
    checkpoint = state.checkpoint()
    evicted: list[Job] = []
    for victim in victims:
        state.unplace(victim)
        evicted.append(victim)
        placement = place_job(state, job, session.policy)
        if placement is not None:
            state.commit(checkpoint)
            return Outcome(placement=placement, evicted=evicted)
    state.rollback(checkpoint)
    return None


def _over_budget_running(session: Session) -> list[Job]:
    """Running over-budget preemptible jobs not yet touched in this cycle, newest first."""
    jobs = [j for j in session.running_untouched() if j.over_budget and j.preemptible]
    return sorted(jobs, key=lambda j: (-j.order, j.project, j.name))


def evicted_reason(job: Job, victim: Job) -> str:
    """The victim's reason, naming its budget and the job that takes its GPUs."""
    return (
        f"evicted: runs as preemptible over-quota work past its budget ({victim.over_budget}); "
        f"{job.project}/{job.name} within budget takes its GPUs (R20.4)"
    )


def explain_over_budget(session: Session) -> None:
    """A pending job past its budget that allocate could not start says why nothing else will
    make room for it (R20.3)."""
    for job in session.pending():
        if job.over_budget and job.key not in session.hard_blocked:
            found = session.reasons.get(job.key) or "no idle GPUs fit it"
            session.reasons[job.key] = (
                f"{found}; past its budget ({job.over_budget}) it runs only on idle GPUs, "
                "as preemptible over-quota work (R20.3)"
            )
