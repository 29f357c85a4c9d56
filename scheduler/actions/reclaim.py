"""Reclaim (R9): a project below its fair share takes GPUs back from projects above theirs.

With user fair share (R21.4-R21.6) the leaves are a project's users: a user within their share
takes GPUs back from a teammate above theirs by the very same rules, levelled one step lower.
"""

from __future__ import annotations

from ..bands import victim_note
from ..minruntime import Shielded
from ..model import Job
from ..ordering import JobQueues
from ..queues import QueueState, leaf_of
from ..resources import asked, unplaceable
from ..session import Session, gpus, nodes_of
from .eviction import Outcome, record_moves, solve
from .signatures import FailedJobs


def reclaim(session: Session) -> None:
    """Pending jobs in allocation order (R9.1) that may reclaim (R9.2) search for victims among
    other projects' preemptible jobs (R9.3) that the validator accepts (R9.4, R9.5). A job no
    node could hold even empty (`resources.unplaceable`) is not tried."""
    queue = JobQueues(session.queues, session.pending(), session.total)
    failed = FailedJobs()
    pool = session.victims()
    while (job := queue.pop()) is not None:
        blocked = can_reclaim(session, job)
        if blocked:
            session.explain(job, blocked)
            continue
        if failed.skip(job) or session.capacity_block(job) or unplaceable(session, job):
            continue  # an unplaceable job keeps allocate's reason (Session.hard_blocked)
        shielded = Shielded()
        victims = pool.queue(
            candidate_projects(session, job, pool.by_queue),
            job.milli_total,
            keep=unprotected(session, job, shielded),
        )
        outcome = solve(
            session,
            job,
            victims,
            lambda j, e, b: reclaimable(session, j, e, b),
            max_candidates=session.policy.max_reclaim_candidates,
        )
        if outcome is None:
            failed.add(job)
            session.explain(job, shielded.reason(session.now, "reclaim"))
            continue
        commit(session, job, outcome)


def can_reclaim(session: Session, job: Job) -> str | None:
    """R9.2: allocated + job within the leaf queue's fair share (the project's, or with user fair
    share the user's share in it, R21.6) and, for an interactive job, the project's quota;
    returns the reason it may not, or None."""
    project = session.queue(job)
    leaf = session.leaf(job)
    if leaf.user is not None and leaf.allocated + job.milli_total > leaf.fair_share:
        return (
            f"would exceed {_who(leaf)}'s user share of {gpus(leaf.fair_share)} in "
            f"{project.name}: {gpus(leaf.allocated)} in use + {gpus(job.milli_total)} "
            "requested (user fair share, R21.6, R9.2)"
        )
    if leaf.user is None and project.allocated + job.milli_total > project.fair_share:
        return (
            f"would exceed {project.name}'s fair share of {gpus(project.fair_share)}: "
            f"{gpus(project.allocated)} in use + {gpus(job.milli_total)} requested (R9.2)"
        )
    if not job.preemptible and project.deserved is not None:
        if project.allocated_np + job.milli_total > project.deserved:
            return f"interactive jobs would exceed {project.name}'s quota (R3.2)"
    return None


def unprotected(session: Session, job: Job, shielded: Shielded):
    """R7.4 as a victim filter: None when no min runtime is set anywhere (every candidate may
    be taken), else a filter that leaves out, and notes in `shielded`, the candidates still
    within the reclaim min runtime resolved for them (the LCA method: from the victim's
    levelled queue of R9.3 up)."""
    protection = session.protection
    if not protection.active:
        return None
    mine = session.leaf(job)
    levels: dict[str, QueueState] = {}

    def keep(victim: Job) -> bool:
        """A victim past the reclaim min runtime resolved for it."""
        leaf = leaf_of(session.queues, victim)
        level = levels.get(leaf.name)
        if level is None:
            level = levels[leaf.name] = levelled(mine, leaf)[1]
        return shielded.admits(victim, protection.reclaim_until(victim, level))

    return keep


def levelled(a: QueueState, b: QueueState) -> tuple[QueueState, QueueState]:
    """The two queues where the paths from the root first differ (R9.3)."""
    path_a, path_b = a.path(), b.path()
    for qa, qb in zip(path_a, path_b, strict=False):
        if qa is not qb:
            return qa, qb
    return path_a[min(len(path_a), len(path_b)) - 1], path_b[min(len(path_a), len(path_b)) - 1]


def victim_queue_qualifies(reclaimer: QueueState, victim: QueueState, demand: int) -> bool:
    """R9.3 for the levelled queues: with the reclaimer within deserved, any victim queue not
    below its deserved; otherwise only a victim queue above its allocatable share."""
    if reclaimer.within_deserved(demand):
        return victim.deserved is None or victim.allocated >= victim.deserved
    allocatable = victim.allocatable
    return allocatable is not None and victim.allocated > allocatable


def candidate_projects(session: Session, job: Job, holders) -> list[str]:
    """Other leaf queues holding preemptible jobs whose levelled queue qualifies (R9.3): other
    projects, and with user fair share the job's teammates (R21.5, R21.6)."""
    mine = session.leaf(job)
    chosen = []
    for name in holders:
        if name == mine.name:
            continue
        reclaimer, victim = levelled(mine, session.queues[name])
        if victim_queue_qualifies(reclaimer, victim, job.milli_total):
            chosen.append(name)
    return chosen


def reclaimable(session: Session, job: Job, evicted: list[Job], before: dict) -> bool:
    """R9.4 then R9.5 on the victims actually evicted, from allocations at search start."""
    mine = session.leaf(job)
    demand = job.milli_total
    remaining: dict[str, int] = {}
    for victim in evicted:
        leaf = leaf_of(session.queues, victim)
        reclaimer, victim_queue = levelled(mine, leaf)
        left = remaining.setdefault(victim_queue.name, before[victim_queue.name][0])
        if not _strategy_allows(reclaimer, victim_queue, left, demand, before):
            return False
        queue: QueueState | None = leaf
        while queue is not None:
            remaining[queue.name] = remaining.get(queue.name, before[queue.name][0])
            remaining[queue.name] -= victim.milli_total
            queue = queue.parent
    return _within_boundaries(session, job, remaining, before)


def _strategy_allows(reclaimer, victim_queue, left: int, demand: int, before: dict) -> bool:
    """MaintainFairShare or GuaranteeDeservedQuota (R9.4), checked before subtracting."""
    allocatable = victim_queue.allocatable
    if allocatable is not None and left > allocatable:
        return True
    within = reclaimer.deserved is None or before[reclaimer.name][0] + demand <= reclaimer.deserved
    return within and victim_queue.deserved is not None and left > victim_queue.deserved


def _ratio(allocated: int, fair_share: int) -> float:
    if fair_share == 0:
        return float("inf") if allocated > 0 else 0.0
    return allocated / fair_share


def _within_boundaries(session: Session, job: Job, remaining: dict, before: dict) -> bool:
    """Saturation guard (R9.5) at every level of the reclaimer's path (from its user's queue
    with user fair share; a user has no quota, so R3.2's part starts at the project, R21.8)."""
    multiplier = max(1.0, session.policy.saturation_multiplier)
    demand = job.milli_total
    for level in session.leaf(job).path()[::-1]:
        mine = remaining.get(level.name, before[level.name][0]) + demand
        ratio = _ratio(mine, level.fair_share)
        for name, left in remaining.items():
            sibling = session.queues[name]
            if sibling is level or sibling.parent is not level.parent:
                continue
            if ratio > 1 and sibling.fair_share > 0:
                if ratio * multiplier >= _ratio(left, sibling.fair_share):
                    return False
        if not job.preemptible and level.deserved is not None and level.user is None:
            if before[level.name][1] + demand > level.deserved:
                return False
    return True


def commit(session: Session, job: Job, outcome: Outcome) -> None:
    """Record the evictions, moves and the start, each with its reason."""
    mine = session.queue(job)
    leaf = session.leaf(job)
    demand = job.milli_total
    what = "quota" if mine.within_deserved(0) else "fair share"
    for victim in outcome.evicted:
        victim_leaf = leaf_of(session.queues, victim)
        if victim_leaf.user is not None and victim.project == job.project:  # R21.5
            text = (
                f"evicted: {_who(leaf)} reclaims their user share in {job.project}; "
                + _over_text(victim_leaf, outcome.before)
                + " (user fair share, R21.5, R9.4)"
            )
        else:
            text = (
                f"evicted: {job.project} reclaims its {what}; "
                + _over_text(session.queues[victim.project], outcome.before)
                + " (R9.4)"
            )
        session.record("evict", victim, "reclaim", text + victim_note(victim), beneficiary=job.key)
    record_moves(session, job, outcome, "reclaim", "R9.7")
    given = sorted({_giver(session, job, v) for v in outcome.evicted})
    source = f" from {', '.join(given)}" if given else ""
    session.record(
        "start",
        job,
        "reclaim",
        f"started on {nodes_of(outcome.placement)}: reclaimed {reclaimed(job, demand)}{source} "
        "(R9)",
        outcome.placement,
    )


def reclaimed(job: Job, demand: int) -> str:
    """What the reclaim made room for: its GPUs, or with CPU or memory requests (issue 26) the
    pod's every resource ("room for 2 pods of 1 GPU, 8 cores")."""
    if not (job.cpu_millis or job.memory_bytes or job.gpu_memory_bytes is not None):
        return gpus(demand)
    pods = f"{job.pods} pods of " if job.pods > 1 else ""
    return f"room for {pods}{asked(job)}"


def _who(queue: QueueState) -> str:
    """A user's queue named as its user (R21.4)."""
    return queue.user or "the anonymous user"


def _giver(session: Session, job: Job, victim: Job) -> str:
    """Whom a reclaim took from: the victim's project, or a teammate by name (R21.5)."""
    leaf = leaf_of(session.queues, victim)
    if leaf.user is not None and victim.project == job.project:
        return _who(leaf)
    return victim.project


def _over_text(queue: QueueState, before: dict) -> str:
    held = before[queue.name][0]
    if queue.user is not None and held > queue.fair_share:  # R21.5
        return (
            f"{_who(queue)} is {gpus(held - queue.fair_share)} above their user share of "
            f"{gpus(queue.fair_share)} in {queue.parent.name}"
        )
    if held > queue.fair_share:
        return (
            f"{queue.label} is {gpus(held - queue.fair_share)} above its fair share of "
            f"{gpus(queue.fair_share)}"
        )
    return f"{queue.label} holds {gpus(held)}, above its quota of {gpus(queue.deserved)}"
