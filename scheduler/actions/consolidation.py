"""Consolidation (R11): make room for a pending job by moving running jobs, evicting none.

Which running jobs are offered as candidates is where Allot improves on KAI (E11). KAI offers
the first `max_consolidation_preemptees` (16) jobs of the victim queue (R8.1): the newest jobs of
the most over-served projects, wherever they run. In a cluster of many 1-GPU jobs those 16 sit
on 16 different nodes, no node can be emptied by moving them, and a whole-node job waits —
while its project is below its quota and GPUs are idle elsewhere (the fragmentation HiveD calls
the "sharing anomaly"). With ``Policy.consolidation_candidates = "node_first"`` (Allot's
default) a pending whole-GPU or CPU-only job is offered the occupants of the nodes that are
cheapest to empty instead: per eligible node, the preemptible jobs that must move for one pod
to fit, counting every resource the pod asks for (issue 26) — whole GPUs (R5.3), CPU and memory
(`node_first` also knows a shared device with room for a fraction or GPU memory, R5.4, R5.5).
Nodes are ranked by the GPUs to move, then by the share of the node's cores or memory to move
(whichever is larger: the scarcer one for this node), then by the number of jobs, then by name;
nodes that already fit a pod, that could not hold one even empty, or where a non-preemptible
occupant is in the way (R7.3) offer nothing.
So a GPU job whose GPUs are free on a node whose cores a CPU-heavy train job holds gets that node
emptied of the CPU job, which moves to a node with cores to spare; a CPU-only job is offered the
jobs whose cores stand in its way.

The gate of R11.1 counts CPU and memory beside GPUs: a job is considered only when the idle and
releasing GPUs, and the free CPU and memory, of its pools cover its request in total. The cap of
R11.1, the scenario generators (R8.3) and the rule that every moved job must find a new place
(R11.1, R8.5) are unchanged, so a consolidation still evicts nobody. ``"victim_queue"`` keeps
KAI's order; scenario ``e11_node_first_consolidation_frees_a_node_of_scattered_jobs`` shows both.
A job no node could hold even empty is not tried (`resources.unplaceable`).

A fraction or a GPU-memory request (R5.4, R5.5) keeps KAI's victim-queue candidates: offered the
node-first path too, the Alibaba trace (docs/simulation.md §9) lost more GPU-hours to moves at two
of three contention levels (kai-plain x0.5: 3,288 -> 4,147; x0.25: 2,228 -> 2,326) for a mixed
change in queueing, so the node-first search stays where it was measured to help.
"""

from __future__ import annotations

from collections.abc import Iterator

from .. import topology
from ..model import Job
from ..ordering import JobQueues, victim_order_key
from ..placement import fits, pools_for
from ..resources import unplaceable
from ..session import Session, nodes_of
from ..state import FULL, NodeState
from .eviction import capacity_after, freed_by_node, record_moves, solve
from .signatures import FailedJobs


def consolidate(session: Session) -> None:
    """For each pending preemptible job whose demand the free GPUs, CPU and memory of its pools
    cover in total (R11.1), try moving up to `max_consolidation_preemptees` running preemptible
    jobs of any project; a scenario counts only if every moved job found a new place.
    Interactive jobs are never moved (R7.3)."""
    if any(index.free_milli for index in session.state.pools.values()):
        pending = session.pending()
    else:
        # A cluster without a free GPU leaves nothing to consolidate into but for CPU-only jobs.
        if all(job.milli_per_pod or job.shared for job in session.jobs):
            return
        pending = [job for job in session.pending() if not (job.milli_per_pod or job.shared)]
    queue = JobQueues(session.queues, pending, session.total)
    failed = FailedJobs()
    pool = session.victims()
    on_node = occupants_by_node(session, pool.by_queue)
    free = FreeResources(session)
    while (job := queue.pop()) is not None:
        if not job.preemptible or failed.skip(job) or session.capacity_block(job):
            continue
        if not free.cover(job) or unplaceable(session, job):
            continue
        if job.topology_required:
            victims = domain_first(session, job, on_node)  # R23.5
        elif session.policy.consolidation_candidates == "node_first" and not job.shared:
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
        free.changed()
        record_moves(session, job, outcome, "consolidation", "R11.1")
        session.record(
            "start",
            job,
            "consolidation",
            f"started on {nodes_of(outcome.placement)} after consolidating running jobs (R11.1)"
            + topology.landed_note(session.state, job, outcome.placement),
            outcome.placement,
        )


class FreeResources:
    """R11.1's gate for one job: the idle and releasing GPUs of its pools (kept by the pool
    indexes) and their free CPU and memory in total (summed once per set of pools, again only
    after a consolidation changed them; a node that does not track a resource has no end of it)."""

    def __init__(self, session: Session):
        self.session = session
        self.totals: dict[tuple[str, ...], tuple[int | None, int | None]] = {}

    def changed(self) -> None:
        """Forget the sums: a consolidation started a job and moved others."""
        self.totals.clear()

    def cover(self, job: Job) -> bool:
        """The job's pools hold its GPUs, CPU and memory in total (not necessarily on one node)."""
        indexes = pools_for(self.session.state, job)
        if sum(index.free_milli for index in indexes) < job.milli_total:
            return False
        if not (job.cpu_millis or job.memory_bytes):
            return True
        pools = self.session.queue(job).node_pools
        if pools not in self.totals:
            self.totals[pools] = self._sum(indexes)
        cpu, memory = self.totals[pools]
        if job.cpu_millis and cpu is not None and cpu < job.cpu_millis * job.pods:
            return False
        return not (
            job.memory_bytes and memory is not None and memory < job.memory_bytes * job.pods
        )

    def _sum(self, indexes) -> tuple[int | None, int | None]:
        cpu: int | None = 0
        memory: int | None = 0
        for index in indexes:
            for name in index.members:
                node = self.session.state.nodes[name]
                cpu = None if cpu is None or node.cpu_free is None else cpu + node.cpu_free
                memory = (
                    None
                    if memory is None or node.memory_free is None
                    else memory + node.memory_free
                )
        return cpu, memory


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
    `job`'s pods first (fewest GPUs to move, then the smallest share of the node's cores or
    memory to move, then fewest jobs, then name); on each node the jobs to move in the order
    :func:`movers` chose them. Nodes that already fit a pod, that could not hold one even empty,
    or that cannot fit one by moving preemptible jobs, offer nothing."""
    state = session.state
    per_pod = job.whole_devices_per_pod
    gpus_only = job.whole and not (job.cpu_millis or job.memory_bytes)
    plans = []
    for index in pools_for(state, job):
        for name in index.members:
            node = state.nodes[name]
            if gpus_only:  # the common case, tested without a call per node
                if node.gpus < per_pod or node.whole_free >= per_pod:
                    continue
            elif not _could_hold(node, job) or fits(node, job):
                continue
            chosen = movers(session, node, on_node.get(name, []), job)
            if chosen:
                gpus = sum(v.milli_total for v in chosen)
                share = _scarcer_share(session, node, chosen)
                plans.append((gpus, share, len(chosen), name, chosen))
    plans.sort(key=lambda plan: plan[:4])
    offered: set = set()
    for *_, chosen in plans:
        for victim in chosen:
            if victim.key not in offered:
                offered.add(victim.key)
                yield victim


def domain_first(session: Session, job: Job, on_node: dict[str, list[Job]]) -> Iterator[Job]:
    """R23.5: for a gang that must run inside one domain, the occupants of the domain cheapest to
    free for it first: per domain of the required level, the nodes that do not fit a pod yet,
    each with the jobs to move off it for one (:func:`movers`), the cheapest enough of them to
    make up the pods the domain lacks; domains by GPUs to move, then jobs, then name. A domain
    that cannot be freed enough by moving preemptible jobs offers nothing."""
    state = session.state
    plans = []
    for pool in topology.pool_names(state, job):
        depth = topology.level_index(state.topology.get(pool, ()), job.topology_required or "")
        if depth is None:
            continue
        for domain in topology.domains(state, pool, depth):
            lacking = job.pods - topology.room(state, domain, job)
            freeing = []
            for name in domain.nodes:
                node = state.nodes[name]
                if fits(node, job) or not _could_hold(node, job):
                    continue
                chosen = movers(session, node, on_node.get(name, []), job)
                if chosen:
                    freeing.append((sum(v.milli_total for v in chosen), len(chosen), name, chosen))
            if lacking <= 0 or len(freeing) < lacking:
                continue
            cheapest = sorted(freeing, key=lambda plan: plan[:3])[:lacking]
            cost = (sum(p[0] for p in cheapest), sum(p[1] for p in cheapest), domain.values)
            plans.append((cost, [v for *_, chosen in cheapest for v in chosen]))
    plans.sort(key=lambda plan: plan[0])
    offered: set = set()
    for _, chosen in plans:
        for victim in chosen:
            if victim.key not in offered:
                offered.add(victim.key)
                yield victim


def _could_hold(node: NodeState, job: Job) -> bool:
    """One pod of `job` fits this node once everything on it is gone (failed devices stay)."""
    if job.whole and node.gpus - len(node.failed) < job.whole_devices_per_pod:
        return False
    if job.shared and (node.gpus == len(node.failed) or node.device_milli(job) > FULL):
        return False
    if job.cpu_millis and node.cpu_total is not None and job.cpu_millis > node.cpu_total:
        return False
    return not (
        job.memory_bytes and node.memory_total is not None and job.memory_bytes > node.memory_total
    )


def movers(session: Session, node: NodeState, occupants: list[Job], job: Job) -> list[Job] | None:
    """The preemptible jobs to move off `node` so that one pod of `job` fits it, or None when
    moving all of them is still not enough. First the GPUs: occupants holding GPUs, smallest in
    GPUs first (newest first on ties, as R8.1), until the pod's devices are free; then, while
    its cores or memory are short, the occupant holding the fewest GPUs, among those the
    smallest that alone makes up the rest of the shortfall, else the one that frees the most of
    it."""
    alive = [v for v in occupants if session.alive(v)]
    chosen: list[Job] = []
    if not _gpus_fit_after(session, node, chosen, job):
        holders = [v for v in alive if v.milli_per_pod or v.shared]  # CPU-only jobs free no GPU
        for victim in sorted(holders, key=lambda v: (v.milli_total, victim_order_key(v))):
            chosen.append(victim)
            if _gpus_fit_after(session, node, chosen, job):
                break
        else:
            return None
    while True:
        cpu, memory = _short_after(session, node, chosen, job)
        if cpu <= 0 and memory <= 0:
            return chosen
        rest = [v for v in alive if v not in chosen]
        if not rest:
            return None
        chosen.append(min(rest, key=lambda v: _resource_key(session, node, v, cpu, memory)))


def _resource_key(session: Session, node: NodeState, victim: Job, cpu: int, memory: int) -> tuple:
    """Smaller is a better next mover for a pod short of `cpu` millicores and `memory` bytes."""
    pods = _pods_on(session, victim, node.name)
    gives_cpu, gives_memory = victim.cpu_millis * pods, victim.memory_bytes * pods
    covers = gives_cpu >= cpu and gives_memory >= memory
    if covers:
        size = (gives_cpu if cpu > 0 else 0, gives_memory if memory > 0 else 0)
    else:
        size = (-min(gives_cpu, max(cpu, 0)), -min(gives_memory, max(memory, 0)))
    return (victim.milli_total, not covers, size, victim_order_key(victim))


def _pods_on(session: Session, job: Job, name: str) -> int:
    """Pods of a running job on node `name`."""
    return sum(1 for pod in session.state.placement.get(job.key, ()) if pod.node == name)


def _gpus_fit_after(session: Session, node: NodeState, chosen: list[Job], job: Job) -> bool:
    """One pod's GPUs fit `node` once `chosen` have left it (R5.3, R5.4, R5.5)."""
    if job.whole:
        if not chosen:
            return node.whole_free >= job.whole_devices_per_pod
        freed = freed_by_node(session, chosen).get(node.name, {})
        return capacity_after(session, node.name, freed)[0] >= job.whole_devices_per_pod
    if not job.shared:
        return True
    milli = node.device_milli(job)
    freed = freed_by_node(session, chosen).get(node.name, {}) if chosen else {}
    return any(
        i not in node.failed and FULL - max(0, used - freed.get(i, 0)) >= milli
        for i, used in enumerate(node.used)
    )


def _short_after(session: Session, node: NodeState, chosen: list[Job], job: Job) -> tuple[int, int]:
    """Millicores and bytes one pod of `job` still lacks on `node` once `chosen` have left it
    (0 or less: enough; an untracked resource never lacks)."""
    cpu = memory = 0
    if job.cpu_millis and node.cpu_free is not None:
        cpu = job.cpu_millis - node.cpu_free
    if job.memory_bytes and node.memory_free is not None:
        memory = job.memory_bytes - node.memory_free
    for victim in chosen:
        pods = _pods_on(session, victim, node.name)
        cpu -= victim.cpu_millis * pods
        memory -= victim.memory_bytes * pods
    return cpu, memory


def _scarcer_share(session: Session, node: NodeState, chosen: list[Job]) -> float:
    """The larger of the shares of the node's allocatable cores and memory that `chosen` hold
    there (0 for a resource the node does not track)."""
    cpu = memory = 0.0
    for victim in chosen:
        pods = _pods_on(session, victim, node.name)
        if node.cpu_total:
            cpu += victim.cpu_millis * pods / node.cpu_total
        if node.memory_total:
            memory += victim.memory_bytes * pods / node.memory_total
    return max(cpu, memory)
