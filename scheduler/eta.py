"""Predicted start times of pending jobs (what the portal shows as each pending job's ETA).

:func:`estimate_starts` simulates forward from a snapshot with no new arrivals: settle the
cluster with the scheduler's own cycles (R1.3), advance the clock to the next predicted end
among running jobs (B1: the job's outlook `expected_end` when given, else `started +
expected_s`; a job past it ends at once, a job with unknown `expected_s` or `started` or an
infinite outlook never ends), remove the jobs ending then, settle again, and so on until
every pending job has started or no predicted end is left. A job's estimate is the clock when a
plan first starts it; jobs that never start in the simulation get None ("unknown"). Pure and
deterministic: the snapshot's clock is the only time it knows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .actions.backfill import predicted_end
from .apply import apply_plan
from .cycle import plan_cycle
from .model import Job, JobKey, Plan, Policy, Snapshot, to_milli
from .queues import build_queues
from .resources import too_large
from .session import gpus, resource_limit_block

MAX_CYCLES_PER_STEP = 100


def estimate_starts(
    snapshot: Snapshot,
    policy: Policy | None = None,
    horizon_s: float | None = None,
    resolution_s: float = 0.0,
    on_step: Callable[[Snapshot], None] | None = None,
) -> dict[JobKey, float | None]:
    """Predicted start time (snapshot clock) of every pending job of `snapshot`, or None when
    the simulation cannot tell: it waits on jobs of unknown run time, on more than `horizon_s`
    seconds of predicted ends, or on something no end frees (a job too big for its pools).

    Bounded: at most one clock step per running or pending job (each step ends at least one
    job) plus one, and at most 100 cycles per step.

    `resolution_s` trades exactness for speed on big clusters: one step ends every job predicted
    to end within `resolution_s` of the next end, at the last of those ends, so an estimate is
    late by at most `resolution_s` and a busy queue takes far fewer steps (the portal uses a
    minute). 0 is exact: one step per distinct end.

    `on_step`, when given, sees the settled cluster at each clock step (the what-if's allocation
    over time, scheduler/whatif.py), the first at the snapshot's own clock."""
    policy = policy or Policy()
    eta: dict[JobKey, float | None] = {j.key: None for j in snapshot.jobs if not j.running}
    waiting = set(eta)
    limit = None if horizon_s is None else snapshot.now + horizon_s
    current = snapshot
    for _ in range(len(snapshot.jobs) + 1):
        current = _settle(current, policy, eta, waiting)
        if on_step is not None:
            on_step(current)
        if not waiting:
            break
        ends = [
            end
            for job in current.jobs
            if job.running and (end := predicted_end(job, current.now)) is not None
        ]
        if not ends:
            break
        at = min(ends)
        if limit is not None and at > limit:
            break
        if resolution_s > 0:
            at = max(end for end in ends if end <= at + resolution_s)
        kept = tuple(job for job in current.jobs if not _ends_by(job, current.now, at))
        current = replace(current, now=at, jobs=kept)
    return eta


def lower_bounds(
    snapshot: Snapshot,
    policy: Policy | None = None,
    horizon_s: float | None = None,
    resolution_s: float = 0.0,
) -> dict[JobKey, float | None]:
    """The earliest each pending job could start: :func:`estimate_starts` with every running job
    that has no predictable end (it outlived every finished job like it, or its run time is
    unknown) taken as ending at once. What the portal shows as "not before" when the exact
    estimate cannot tell: those jobs may end any moment, but not sooner than that, and the
    jobs ahead in the queue (R4.1-R4.3) still run their predicted times first."""
    now = snapshot.now
    jobs = tuple(
        replace(job, expected_end=now) if job.running and predicted_end(job, now) is None else job
        for job in snapshot.jobs
    )
    return estimate_starts(replace(snapshot, jobs=jobs), policy, horizon_s, resolution_s)


def cannot_start(snapshot: Snapshot, job: Job) -> str | None:
    """Why `job` can never start as submitted, whatever ends, or None. Only what no running
    job's end can change: its project's or department's limit below the job's total (R3.1), a
    non-preemptible job above a quota (R3.2: only non-preemptible usage counts, so a job larger
    than the quota itself is never admitted), a CPU or memory total above its project's CPU or
    memory limit (issue 26), or pods larger than every node of its pools in healthy GPUs, CPU,
    memory or GPU memory (it waits for a bigger node to join, issue 24 item 10: a pending
    reason, not an error)."""
    queues = build_queues(snapshot)
    amount = job.milli_total
    queue = queues.get(job.project)
    path = queue.path()[::-1] if queue is not None else []
    for q in path:
        if q.limit is not None and amount > q.limit:
            return (f"cannot start: it asks for {gpus(amount)}, more than {q.name}'s limit of "
                    f"{gpus(q.limit)} (R3.1)")  # fmt: skip
    if not job.preemptible:
        for q in path:
            if q.deserved is not None and amount > q.deserved:
                quota = gpus(q.deserved)
                return (f"cannot start: interactive jobs may not exceed {q.name}'s quota "
                        f"({quota}); this one asks for {gpus(amount)} (R3.2)")  # fmt: skip
    for q in path:
        over = resource_limit_block(_emptied(q), job)
        if over:
            return "cannot start: " + over.removeprefix("over limit: ")
    pools = queue.node_pools if queue is not None else ()
    nodes = [n for n in snapshot.nodes if not pools or n.pool in pools]
    where = f"in {', '.join(pools)}" if pools else "in the cluster"
    largest = max((to_milli(n.healthy_gpus) for n in nodes), default=0)
    if job.whole and job.milli_per_pod > largest:
        return (f"cannot start until a node with {gpus(job.milli_per_pod)} joins: the largest "
                f"{where} has {gpus(largest)}")  # fmt: skip
    big = too_large(nodes, job, where)
    if big:
        return f"cannot start until a larger node joins: {big}"
    return None


def _emptied(queue):
    """The queue with nothing allocated: a limit the job alone exceeds no end can lift."""
    queue.allocated_cpu = queue.allocated_memory = 0
    return queue


def resolution_for(snapshot: Snapshot, horizon_s: float, minimum_s: float = 60.0,
                   steps: int = 50) -> float:  # fmt: skip
    """A `resolution_s` for `estimate_starts`: `minimum_s`, or 1/`steps` of the span of the
    running jobs' predicted ends (capped at `horizon_s`) when that is longer, so a big busy
    cluster takes about `steps` clock steps instead of one per distinct end."""
    ends = [end for job in snapshot.jobs if job.running
            and (end := predicted_end(job, snapshot.now)) is not None]  # fmt: skip
    span = max(ends, default=snapshot.now) - snapshot.now
    return max(minimum_s, min(span, horizon_s) / steps)


def _ends_by(job, now: float, at: float) -> bool:
    """A running job predicted to end at or before `at` (it leaves the simulation then)."""
    if not job.running:
        return False
    end = predicted_end(job, now)
    return end is not None and end <= at


def _settle(snapshot: Snapshot, policy: Policy, eta: dict, waiting: set) -> Snapshot:
    """Plan and apply until a plan is empty, noting when each waiting job first starts. A plan
    :func:`settles` says the next one would be empty ends it without planning that one (half
    the cycles of a forward run over a long queue)."""
    for _ in range(MAX_CYCLES_PER_STEP):
        plan = plan_cycle(snapshot, policy)
        if plan.empty:
            break
        for decision in plan.decisions:
            if decision.kind == "start" and decision.job in waiting:
                eta[decision.job] = snapshot.now
                waiting.discard(decision.job)
        snapshot = apply_plan(snapshot, plan)
        if settles(snapshot, policy, plan):
            break
    return snapshot


def settles(snapshot: Snapshot, policy: Policy, plan: Plan) -> bool:
    """True when the cycle after `plan` is sure to decide nothing: the policy only allocates
    (no consolidation, reclaim, preempt or backfill, and no reservations in the snapshot) and
    `plan` only started jobs. Then no job left Running, so the next cycle's pending jobs are
    ones this plan's allocate refused, on a cluster no emptier and under counters no lower:
    a job over a limit or quota stays over it, and one that did not fit does not fit now
    (a gang places pod by pod, each pod taking one of the pod-sized slots the nodes have,
    so fewer free GPUs, CPU or memory never make room), whatever order fair share gives them.
    Nothing evicts either: a stale gang was one already, at the same clock."""
    if policy.consolidation or policy.reclaim or policy.preempt or policy.backfill:
        return False
    if snapshot.reservations:
        return False
    return all(d.kind == "start" and d.action == "allocate" for d in plan.decisions)
