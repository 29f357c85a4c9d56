"""Choosing nodes and devices for a job's pods (R5) and placing gangs all-or-nothing (R6.1).

A pod fits a node only if every resource fits (issue 26): its GPUs (whole idle devices, R5.3; a
shared device with room for its fraction or GPU memory, R5.4, R5.5; never a failed device), and
the node's free CPU and memory, counting what running pods hold (a node that does not track
CPU or memory is never limited by it).

Node order (R5.1) is the sum of plugin scores, highest first, ties by node name: GPU sharing
(10,000: a shared pod and a shared device with room), availability (1,000: fits on idle
devices, not only on ones an eviction of this cycle is releasing), then bin-pack 0-9 (fewest free
devices first, R5.2) or spread (most free devices per GPU first). Because the lower scores never
add up to a higher one, the order is the lexicographic key built in :func:`_node_key`.

Bin-packing counts the scarcer resource, GPUs, first: a CPU-only pod goes to the node with the
fewest free GPUs (a node without GPUs, or whose GPUs are all taken, before one whose idle GPUs
would be stranded by the cores it takes — KAI gives a CPU-only pod on a CPU-only node a
resource-type score of 10, Allot extends it to every node by its free GPUs). Among nodes with
equal free GPUs the fullest in CPU or memory wins (KAI's nodeplacement ``cpu: binpack``): the
node's *fill* is the smallest fraction of its CPU or memory (those the pod asks for and the node
tracks) left free after the pod; spread takes the largest instead.

A job with a topology constraint (R23, scheduler/topology.py) is placed inside one domain: the
candidate node sets are tried narrowest tier first, tightest domain first, and inside a set the
order above applies. Every action places through :func:`place_job`, so allocate, reclaim,
preempt and consolidation all keep a required job inside one domain.
"""

from __future__ import annotations

from . import topology
from .model import Job, PodPlacement, Policy
from .state import FULL, ClusterState, NodeState


def place_job(
    state: ClusterState, job: Job, policy: Policy, allowed: set[str] | None = None
) -> tuple[PodPlacement, ...] | None:
    """Place every pod of `job` (journaled) and return the placement, or None with nothing
    changed when some pod does not fit (gangs are all or nothing, R6.1). `allowed` limits the
    nodes; a job with a topology constraint goes to the first domain of
    :func:`topology.candidates` that takes the whole gang (R23.2, R23.3)."""
    if allowed is None and topology.constrained(job):
        return _place_in_domain(state, job, policy)
    checkpoint = state.checkpoint()
    pods: list[PodPlacement] = []
    for _ in range(job.pods):
        pod = best_pod_placement(state, job, policy, allowed)
        if pod is None:
            state.rollback(checkpoint)
            return None
        _occupy(state, job, pod)
        pods.append(pod)
    placement = tuple(pods)
    # Re-record as one job placement so the queue counters move once for the whole gang.
    state.rollback(checkpoint)
    state.place(job, placement)
    return placement


def _place_in_domain(
    state: ClusterState, job: Job, policy: Policy
) -> tuple[PodPlacement, ...] | None:
    """R23.2, R23.3: the first candidate node set that takes the whole gang (a preference's last
    tier is its whole pools, so it falls back to anywhere; a requirement has no such tier)."""
    for tier in topology.candidates(state, job):
        for _domain, nodes in tier:
            placement = place_job(state, job, policy, set(nodes))
            if placement is not None:
                return placement
    return None


def _occupy(state: ClusterState, job: Job, pod: PodPlacement) -> None:
    node = state.nodes[pod.node]
    milli = node.device_milli(job)
    for device in pod.devices:
        state._set_device(node, device, node.used[device] + milli, False)
    state._set_resources(node, job, +1)


def best_pod_placement(
    state: ClusterState, job: Job, policy: Policy, allowed: set[str] | None = None
) -> PodPlacement | None:
    """The first node in R5.1 order (among `allowed`, when given) that can hold one more pod of
    `job`, with its devices."""
    node = best_node(state, job, policy, allowed)
    if node is None:
        return None
    return PodPlacement(node.name, choose_devices(node, job, policy), _share(node, job))


def _share(node: NodeState, job: Job) -> float:
    if job.gpu_memory_bytes is not None:
        return node.device_milli(job) / FULL
    return 1.0 if job.gpus >= 1 else job.gpus


def pools_for(state: ClusterState, job: Job) -> list:
    """Pool indexes the job's project may use (empty node_pools = every pool, R5)."""
    queue = state.queues.get(job.project)
    wanted = queue.node_pools if queue is not None else ()
    if not wanted:
        return list(state.pools.values())
    return [state.pools[p] for p in wanted if p in state.pools]


def gpus_fit(node: NodeState, job: Job) -> bool:
    """One more pod's GPUs fit this node's free (idle or releasing, never failed) devices
    (R5.3, R5.4, R5.5), whatever its CPU and memory say."""
    if job.whole:
        return node.whole_free >= job.whole_devices_per_pod
    if not job.shared:
        return True
    milli = node.device_milli(job)
    if milli > FULL:
        return False  # a GPU-memory request larger than this node's devices (R5.5)
    return node.whole_free >= 1 or bool(node.shared_room(milli))


def fits(node: NodeState, job: Job) -> bool:
    """One more pod fits on this node: eligible, every resource (GPUs, CPU, memory) free."""
    return node.eligible and node.short_of(job) is None and gpus_fit(node, job)


def fill(node: NodeState, job: Job) -> float:
    """The smallest fraction of the node's CPU or memory left free after one more pod of `job`,
    over the resources the pod asks for and the node tracks (1.0 when none)."""
    left = 1.0
    if job.cpu_millis and node.cpu_total:
        left = min(left, (node.cpu_free - job.cpu_millis) / node.cpu_total)
    if job.memory_bytes and node.memory_total:
        left = min(left, (node.memory_free - job.memory_bytes) / node.memory_total)
    return left


def _node_key(node: NodeState, job: Job, policy: Policy) -> tuple:
    """Smaller is better: (-sharing, -availability, bin-pack or spread, CPU/memory fill, name)
    (R5.1, R5.2; the fill of issue 26 breaks ties)."""
    sharing = job.shared and bool(node.shared_room(node.device_milli(job)))
    if job.whole:
        available = node.idle_whole() >= job.whole_devices_per_pod
    elif job.shared:
        available = sharing or node.idle_whole() >= 1
    else:
        available = True  # a CPU-only pod needs no device
    if policy.gpu_placement == "spread":
        free = -(node.whole_free / node.gpus) if node.gpus else 0.0
        return (not sharing, not available, free, -fill(node, job), node.name)
    return (not sharing, not available, node.whole_free, fill(node, job), node.name)


def best_node(
    state: ClusterState, job: Job, policy: Policy, allowed: set[str] | None = None
) -> NodeState | None:
    """The best fitting node for one more pod of `job`, found through the pool indexes; with
    `allowed` (a topology domain, R23), the best of those nodes."""
    if allowed is not None:
        members = [state.nodes[n] for index in pools_for(state, job) for n in index.members]
        return _best_of([node for node in members if node.name in allowed], job, policy)
    candidates: list[NodeState] = []
    # Requests beyond whole GPUs may not fit the first node of a bucket (CPU, memory, a device
    # too small for GPU memory): then every node of the lowest bucket with a fitting node is a
    # candidate, so the fill can break the tie.
    scan = bool(job.cpu_millis or job.memory_bytes or job.gpu_memory_bytes is not None)
    for index in pools_for(state, job):
        if policy.gpu_placement == "spread":
            candidates.extend(state.nodes[n] for n in index.members)
            continue
        candidates.extend(state.nodes[n] for n in index.touched)
        if job.shared:
            candidates.extend(state.nodes[n] for n in index.shared)
        need = max(1, job.whole_devices_per_pod) if job.whole or job.shared else 0
        for count in range(need, len(index.buckets)):
            bucket = index.buckets[count]
            if not bucket:
                continue
            if not scan:
                candidates.append(state.nodes[min(bucket)])
                break
            fitting = [state.nodes[n] for n in bucket if fits(state.nodes[n], job)]
            if fitting:
                candidates.extend(fitting)
                break
    return _best_of(candidates, job, policy)


def _best_of(candidates: list[NodeState], job: Job, policy: Policy) -> NodeState | None:
    """The fitting node of `candidates` first in R5.1 order."""
    best = None
    best_key = None
    for node in candidates:
        if not fits(node, job):
            continue
        key = _node_key(node, job, policy)
        if best_key is None or key < best_key:
            best, best_key = node, key
    return best


def choose_devices(node: NodeState, job: Job, policy: Policy) -> tuple[int, ...]:
    """Devices on `node` for one pod: whole pods take free devices, releasing before idle;
    shared pods (a fraction, R5.4, or GPU memory, R5.5) take the fullest shared device with
    room, else a fresh device (gpupack); with `gpu_sharing="spread"` a fresh device first, then
    the least used shared one. CPU-only pods take none."""
    if job.gpus <= 0 and job.gpu_memory_bytes is None:
        return ()
    free = [i for i in range(node.gpus) if node.used[i] == 0]
    # Releasing devices first: a placement made on top of evictions is charged to what they
    # release, so the node keeps its idle devices for the next pod (R1.3, R5.1).
    free.sort(key=lambda i: (not node.releasing[i], i))
    if job.whole:
        return tuple(sorted(free[: job.whole_devices_per_pod]))
    shared = node.shared_room(node.device_milli(job))
    if policy.gpu_sharing == "spread":
        if free:
            return (free[0],)
        return (min(shared, key=lambda i: (node.used[i], i)),)
    if shared:
        return (min(shared, key=lambda i: (-node.used[i], i)),)
    return (free[0],)
