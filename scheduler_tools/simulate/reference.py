"""A reference point no placement-aware scheduler can beat in its own order: the pooled fluid
cluster.

:func:`pooled_fifo` replays a trace on `capacity` GPUs as one pool — no nodes (a job fits
whenever enough GPUs are free anywhere, so there is no fragmentation), no teams, no quotas, no
evictions — by greedy list scheduling in submission order: at every submission and completion,
walk the waiting jobs oldest first and start every one that fits (a job that does not fit is
skipped, as R4.4 skips it). It answers "how much queueing does the load itself force, if
sharing were perfect and free?", the baseline against which `fifo-strict` (sharing forbidden)
and `kai` (sharing with fairness, placement and the cost of reclaim) are read in
docs/simulation.md. It is not a policy of the core and never runs in the portal.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from .trace import Trace


@dataclass(frozen=True)
class PooledResult:
    """Average and maximum queueing (seconds) of the pooled replay, and its makespan."""

    jobs: int
    avg_queue_s: float
    max_queue_s: float
    makespan_s: float


def pooled_fifo(trace: Trace, capacity: float) -> PooledResult:
    """Greedy list scheduling of the trace's jobs on one pool of `capacity` GPUs (see the
    module doc). Jobs larger than the pool never start and are left out of the figures."""
    jobs = [j for j in trace.jobs if j.gpus <= capacity]
    ends: list[tuple[float, float]] = []  # (end time, GPUs)
    waiting: list = []
    free = capacity
    smallest = min((j.gpus for j in jobs if j.gpus > 0), default=0.0)
    waits: list[float] = []
    last_end = 0.0
    position = 0
    while position < len(jobs) or waiting:
        next_submit = jobs[position].submit_s if position < len(jobs) else float("inf")
        now = min(next_submit, ends[0][0] if ends else float("inf"))
        while ends and ends[0][0] <= now:
            free += heapq.heappop(ends)[1]
        while position < len(jobs) and jobs[position].submit_s <= now:
            waiting.append(jobs[position])
            position += 1
        still: list = []
        for index, job in enumerate(waiting):
            if free < smallest:
                still.extend(waiting[index:])
                break
            if job.gpus <= free + 1e-9:
                free -= job.gpus
                waits.append(now - job.submit_s)
                end = now + job.duration_s
                last_end = max(last_end, end)
                heapq.heappush(ends, (end, job.gpus))
            else:
                still.append(job)
        waiting = still
    first = jobs[0].submit_s if jobs else 0.0
    return PooledResult(
        jobs=len(waits),
        avg_queue_s=sum(waits) / len(waits) if waits else 0.0,
        max_queue_s=max(waits, default=0.0),
        makespan_s=last_end - first,
    )
