"""Consolidation (R11): make room for a pending job by moving running jobs, evicting none.

Which running jobs are offered as candidates is where Allot improves on KAI (E11). KAI offers
the first `max_consolidation_preemptees` (16) jobs of the victim queue (R8.1): the newest jobs of
the most over-served projects, wherever they run. In a cluster of many 1-GPU jobs those 16 sit
on 16 different nodes, no node can be emptied by moving them, and a whole-node job waits —
while its project is below its quota and GPUs are idle elsewhere (the fragmentation HiveD calls
the "sharing anomaly"). With ``Policy.consolidation_candidates = "node_first"`` (Allot's
default) a whole-GPU job is offered the occupants of the nodes that are cheapest to empty
instead: per eligible node, the fewest GPUs of preemptible jobs that must move for one pod to
fit; nodes with a non-preemptible occupant in the way are skipped (R7.3). The cap of R11.1, the
scenario generators (R8.3) and the rule that every moved job must find a new place (R11.1,
R8.5) are unchanged, so a consolidation still evicts nobody. ``"victim_queue"`` keeps KAI's
order; scenario ``e11_node_first_consolidation_frees_a_node_of_scattered_jobs`` shows both.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..model import Job
from ..ordering import JobQueues, victim_order_key
from ..placement import pools_for
from ..session import Session, nodes_of
from .eviction import capacity_after, freed_by_node, record_moves, solve
from .signatures import FailedJobs


def consolidate(session: Session) -> None:
    """For each pending preemptible job whose demand the free GPUs cover in total (R11.1),
    try moving up to `max_consolidation_preemptees` running preemptible jobs of any project;
    a scenario counts only if every moved job found a new place. Interactive jobs are never
    moved (R7.3)."""
    if not any(index.free_milli for index in session.state.pools.values()):
        return  # a full cluster leaves nothing to consolidate into
    queue = JobQueues(session.queues, session.pending(), session.total)
    failed = FailedJobs()
    pool = session.victims()
    on_node = occupants_by_node(session, pool.by_queue)
    while (job := queue.pop()) is not None:
        if not job.preemptible or failed.skip(job) or session.capacity_block(job):
            continue
        if _free_milli(session, job) < job.milli_total:
            continue
        if session.policy.consolidation_candidates == "node_first" and job.whole:
            victims = node_first(session, job, on_node)
        else:
            victims = pool.queue(pool.by_queue, job.milli_total)
        outcome = solve(
            session,
            job,
            victims,
            lambda _job, evicted, _before: not evicted,
            max_candidates=session.policy.max_consolidation_preemptees,
        )
        if outcome is None:
            failed.add(job)
            continue
        record_moves(session, job, outcome, "consolidation", "R11.1")
        session.record(
            "start",
            job,
            "consolidation",
            f"started on {nodes_of(outcome.placement)} after consolidating running jobs (R11.1)",
            outcome.placement,
        )


def _free_milli(session: Session, job) -> int:
    """Idle and releasing GPUs the job's pools hold in total."""
    return sum(index.free_milli for index in pools_for(session.state, job))


def occupants_by_node(session: Session, by_queue: dict[str, list[Job]]) -> dict[str, list[Job]]:
    """The running preemptible jobs on each node (a gang on each of its nodes), built once per
    action; a job moved or evicted later in the action is skipped through `Session.alive`."""
    on_node: dict[str, list[Job]] = {}
    for jobs in by_queue.values():
        for victim in jobs:
            for name in {pod.node for pod in session.state.placement[victim.key]}:
                on_node.setdefault(name, []).append(victim)
    return on_node


def node_first(session: Session, job: Job, on_node: dict[str, list[Job]]) -> Iterator[Job]:
    """E11: running preemptible jobs node by node, the node that is cheapest to empty for one of
    `job`'s pods first (fewest GPUs to move, then fewest jobs, then name); on each node the jobs
    to move, smallest first (newest first on ties, as R8.1). Nodes that already fit a pod, or
    that cannot fit one by moving preemptible jobs, offer nothing."""
    state = session.state
    per_pod = job.whole_devices_per_pod
    plans = []
    for index in pools_for(state, job):
        for name in index.members:
            node = state.nodes[name]
            if not node.eligible or node.gpus < per_pod or node.whole_free >= per_pod:
                continue
            movers = _movers(session, name, on_node.get(name, []), per_pod)
            if movers is not None:
                cost = sum(v.milli_total for v in movers)
                plans.append((cost, len(movers), name, movers))
    plans.sort(key=lambda plan: plan[:3])
    offered: set = set()
    for *_, movers in plans:
        for victim in movers:
            if victim.key not in offered:
                offered.add(victim.key)
                yield victim


def _movers(session: Session, name: str, occupants: list[Job], per_pod: int) -> list[Job] | None:
    """The preemptible jobs to move off node `name` so that `per_pod` whole devices are free,
    taken smallest first; None when moving all of them is still not enough."""
    free = session.state.nodes[name].whole_free
    chosen: list[Job] = []
    alive = [v for v in occupants if session.alive(v)]
    for victim in sorted(alive, key=lambda v: (v.milli_total, victim_order_key(v))):
        if free >= per_pod:
            break
        chosen.append(victim)
        freed = freed_by_node(session, chosen).get(name, {})
        free = capacity_after(session, name, freed)[0]
    return chosen if free >= per_pod else None
