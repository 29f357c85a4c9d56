"""Topology domains: which nodes share a rack, a block, an NVLink clique (R23, docs/topology.md).

A node pool's topology is an ordered list of node label keys, widest first (block, rack,
kubernetes.io/hostname; KAI's and Kueue's `Topology` levels). The nodes of a pool that carry the
labels of every level down to level `i` and agree on their values form one *domain* of that level
(R23.1); a node missing one of those labels is in no domain of that level or below.

A job names a level by its key or by its short name (the part after the last "/": "rack" for
`example.com/rack`). This module only measures: how many pods of a job each domain could take now
(KAI's `AllocatablePods`), which domains to try in which order (R23.2, R23.3), and what to say
when none fits. Placing inside a domain is `scheduler.placement.place_job`'s work.
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import Job
from .session import gpus
from .state import FULL, ClusterState, NodeState

ROOT = -1
"""The tier of a whole pool: a preference that fits no domain falls back to anywhere (R23.3)."""


def short(key: str) -> str:
    """A level's short name: the label key after its last "/" ("example.com/rack" -> "rack")."""
    return key.rsplit("/", 1)[-1]


def level_index(levels: tuple[str, ...], name: str) -> int | None:
    """The position of level `name` (a label key or its short name) in `levels`, or None."""
    for i, key in enumerate(levels):
        if name in (key, short(key)):
            return i
    return None


@dataclass(frozen=True)
class Domain:
    """The nodes of one pool that share the values of its levels down to `depth` (R23.1);
    `depth` ROOT is the whole pool."""

    pool: str
    depth: int
    values: tuple[str, ...]
    nodes: tuple[str, ...]

    def name(self, levels: tuple[str, ...]) -> str:
        """'rack r3' (the level's short name and the domain's label value), or 'pool gpu-a'."""
        if self.depth == ROOT:
            return f"pool {self.pool}"
        return f"{short(levels[self.depth])} {self.values[-1]}"


def constrained(job: Job) -> bool:
    """True for a job with a topology constraint (R23.2, R23.3)."""
    return bool(job.topology_required or job.topology_preferred)


def pool_names(state: ClusterState, job: Job) -> list[str]:
    """The pools the job's project may use that hold eligible nodes (R5)."""
    queue = state.queues.get(job.project)
    wanted = queue.node_pools if queue is not None else ()
    return [p for p in (wanted or state.pools) if p in state.pools]


def domains(state: ClusterState, pool: str, depth: int) -> list[Domain]:
    """The domains of level `depth` in `pool` (ROOT: the pool itself), built once per cycle:
    membership never changes within one."""
    key = (pool, depth)
    if key not in state.domain_cache:
        members = sorted(state.pools[pool].members)
        if depth == ROOT:
            state.domain_cache[key] = [Domain(pool, ROOT, (), tuple(members))]
        else:
            levels = state.topology[pool][: depth + 1]
            groups: dict[tuple[str, ...], list[str]] = {}
            for name in members:
                labels = state.labels.get(name, {})
                values = tuple(labels.get(level) for level in levels)
                if None not in values:
                    groups.setdefault(values, []).append(name)  # type: ignore[arg-type]
            state.domain_cache[key] = [
                Domain(pool, depth, values, tuple(nodes))
                for values, nodes in sorted(groups.items())
            ]
    return state.domain_cache[key]


def tiers(state: ClusterState, pool: str, job: Job) -> list[int] | None:
    """The levels to try for `job` in `pool`, narrowest first (R23.2, R23.3): the required level
    alone; the preferred level, then each wider one, then the whole pool; with both, from the
    preferred level up to the required one. None when the pool cannot take the job: the
    required level is not among its levels (R23.4)."""
    levels = state.topology.get(pool, ())
    required = level_index(levels, job.topology_required) if job.topology_required else None
    if job.topology_required and required is None:
        return None
    preferred = level_index(levels, job.topology_preferred) if job.topology_preferred else None
    top = ROOT if required is None else required
    if preferred is None or preferred <= top:
        return [top]
    return list(range(preferred, top - 1, -1))


def pods_fit(node: NodeState, job: Job) -> int:
    """How many pods of `job` fit on `node` now (KAI's node accommodation): whole free devices,
    room on devices for fractions or GPU memory, then free CPU and memory; at most `job.pods`."""
    if not node.eligible:
        return 0
    count = job.pods
    if job.whole:
        count = node.whole_free // job.whole_devices_per_pod
    elif job.shared:
        milli = node.device_milli(job)
        count = 0 if milli > FULL else sum((FULL - used) // milli for used in node.used)
    if job.cpu_millis and node.cpu_free is not None:
        count = min(count, node.cpu_free // job.cpu_millis)
    if job.memory_bytes and node.memory_free is not None:
        count = min(count, node.memory_free // job.memory_bytes)
    return max(0, min(count, job.pods))


def room(state: ClusterState, domain: Domain, job: Job) -> int:
    """Pods of `job` the domain could take now, at most `job.pods` per node."""
    return sum(pods_fit(state.nodes[name], job) for name in domain.nodes)


def candidates(state: ClusterState, job: Job) -> list[list[tuple[Domain, tuple[str, ...]]]]:
    """The node sets to try, tier by tier, narrowest tier first (R23.2, R23.3). Within a tier,
    domains with room for the whole gang, tightest first (least room, then pool and name: KAI's
    best fit); a domain wider than the preferred level is offered first as the fewest of its
    children that hold the gang together (most room first, as KAI's preference improvement),
    then whole."""
    per_pool = {pool: tiers(state, pool, job) for pool in pool_names(state, job)}
    steps = max((len(t) for t in per_pool.values() if t), default=0)
    result = []
    for step in range(steps):
        fitting = []
        for pool, levels in per_pool.items():
            if levels and step < len(levels):
                for domain in domains(state, pool, levels[step]):
                    free = room(state, domain, job)
                    if free >= job.pods:
                        fitting.append((free, domain.pool, domain.values, domain))
        fitting.sort(key=lambda item: item[:3])
        tier = []
        for *_, domain in fitting:
            if step > 0:
                subset = _fewest_children(state, domain, job)
                if subset is not None:
                    tier.append((domain, subset))
            tier.append((domain, domain.nodes))
        result.append(tier)
    return result


def _fewest_children(state: ClusterState, domain: Domain, job: Job) -> tuple[str, ...] | None:
    """The nodes of the fewest child domains (one level narrower) that together have room for
    the gang, or None when the domain has no narrower level or one child alone would do (then
    the narrower tier already offered it)."""
    levels = state.topology.get(domain.pool, ())
    depth = domain.depth + 1
    if depth >= len(levels):
        return None
    inside = set(domain.nodes)
    children = [d for d in domains(state, domain.pool, depth) if inside.issuperset(d.nodes)]
    children.sort(key=lambda d: (-room(state, d, job), d.values))
    chosen: list[str] = []
    total = 0
    for child in children:
        chosen.extend(child.nodes)
        total += room(state, child, job)
        if total >= job.pods:
            return tuple(chosen)
    return None


def landed(state: ClusterState, job: Job, nodes: set[str]) -> str:
    """The narrowest domain that holds every node of a placement, in words ('rack r3'), or ''
    when the job has no constraint or its pools no topology (the job page shows it, R23.5)."""
    if not constrained(job):
        return ""
    pools = {state.nodes[name].pool for name in nodes if name in state.nodes}
    if len(pools) != 1:
        return ""
    pool = pools.pop()
    for depth in range(len(state.topology.get(pool, ())) - 1, -1, -1):
        for domain in domains(state, pool, depth):
            if nodes.issubset(domain.nodes):
                return domain.name(state.topology[pool])
    return ""


def landed_note(state: ClusterState, job: Job, placement) -> str:
    """'; in rack r3 (R23.1)' for a start decision's reason, or '' (see :func:`landed`)."""
    where = landed(state, job, {pod.node for pod in placement})
    return f"; in {where} (R23.1)" if where else ""


def required_reason(state: ClusterState, job: Job) -> str:
    """Why a job with a required level waits though it might fit the pools as a whole (R23.2):
    the level, the domain with the most room and how much, and the room in the pools."""
    level = job.topology_required or ""
    pools = pool_names(state, job)
    usable = [p for p in pools if tiers(state, p, job) is not None]
    if not usable:
        where = ", ".join(pools) or "none"
        return f"no node pool it may use ({where}) has a topology level {level!r} (R23.4)"
    best = None
    for pool in usable:
        depth = level_index(state.topology[pool], level)
        for domain in domains(state, pool, depth):  # type: ignore[arg-type]
            free = room(state, domain, job)
            if best is None or free > best[0]:
                best = (free, domain.name(state.topology[pool]))
    total = sum(room(state, d, job) for p in usable for d in domains(state, p, ROOT))
    each = f"{gpus(job.milli_per_pod)} each" if job.milli_per_pod else "CPU only"
    roomiest = f"the roomiest, {best[1]}, has room for {best[0]}" if best else "none is labelled"
    return (
        f"no {short(level)} has room for all {job.pods} pods ({each}) at once: {roomiest}; "
        f"the node pools for {total} (R23.2)"
    )


def never_fits(state: ClusterState, job: Job) -> str | None:
    """Why no domain of the required level could hold the gang even with every node empty
    (R23.4), or None. Whole-GPU and CPU-only gangs are counted; other shapes are left to the
    pools' check (they are rarely spread over nodes)."""
    if not job.topology_required:
        return None
    pools = pool_names(state, job)
    usable = [p for p in pools if tiers(state, p, job) is not None]
    if not usable:
        return required_reason(state, job)
    if not job.whole:
        return None
    per_pod = job.whole_devices_per_pod
    best = 0
    for pool in usable:
        depth = level_index(state.topology[pool], job.topology_required)
        for domain in domains(state, pool, depth):  # type: ignore[arg-type]
            empty = sum(
                (state.nodes[n].gpus - len(state.nodes[n].failed)) // per_pod for n in domain.nodes
            )
            best = max(best, empty)
    if best >= job.pods:
        return None
    level = short(job.topology_required)
    return (
        f"no {level} could hold all {job.pods} pods of {gpus(job.milli_per_pod)} even empty: "
        f"the largest holds {best} (R23.4)"
    )
