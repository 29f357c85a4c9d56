"""Choosing nodes and devices for a job's pods (R5) and placing gangs all-or-nothing (R6.1).

Node order (R5.1) is the sum of plugin scores, highest first, ties by node name: GPU sharing
(10,000: a fractional pod and a shared device with room), availability (1,000: fits on idle
devices, not only on ones an eviction of this cycle is releasing), then bin-pack 0-9 (fewest free
devices first, R5.2) or spread (most free devices per GPU first). Because the lower scores never
add up to a higher one, the order is the lexicographic key built in :func:`_node_key`.
"""

from __future__ import annotations

from .model import Job, PodPlacement, Policy
from .state import FULL, ClusterState, NodeState


def place_job(state: ClusterState, job: Job, policy: Policy) -> tuple[PodPlacement, ...] | None:
    """Place every pod of `job` (journaled) and return the placement, or None with nothing
    changed when some pod does not fit (gangs are all or nothing, R6.1)."""
    checkpoint = state.checkpoint()
    pods: list[PodPlacement] = []
    for _ in range(job.pods):
        pod = best_pod_placement(state, job, policy)
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


def _occupy(state: ClusterState, job: Job, pod: PodPlacement) -> None:
    node = state.nodes[pod.node]
    milli = FULL if job.gpus >= 1 else job.milli_per_pod
    for device in pod.devices:
        state._set_device(node, device, node.used[device] + milli, False)


def best_pod_placement(state: ClusterState, job: Job, policy: Policy) -> PodPlacement | None:
    """The first node in R5.1 order that can hold one more pod of `job`, with its devices."""
    node = best_node(state, job, policy)
    if node is None:
        return None
    return PodPlacement(node.name, choose_devices(node, job, policy), _share(job))


def _share(job: Job) -> float:
    return 1.0 if job.gpus >= 1 else job.gpus


def pools_for(state: ClusterState, job: Job) -> list:
    """Pool indexes the job's project may use (empty node_pools = every pool, R5)."""
    queue = state.queues.get(job.project)
    wanted = queue.node_pools if queue is not None else ()
    if not wanted:
        return list(state.pools.values())
    return [state.pools[p] for p in wanted if p in state.pools]


def fits(node: NodeState, job: Job) -> bool:
    """One more pod fits on this node's free (idle or releasing) capacity (R5.3, R5.4)."""
    if not node.eligible:
        return False
    if job.gpus >= 1:
        return node.whole_free >= job.whole_devices_per_pod
    if job.milli_per_pod == 0:
        return True
    return node.whole_free >= 1 or bool(node.shared_room(job.milli_per_pod))


def _node_key(node: NodeState, job: Job, policy: Policy) -> tuple:
    """Smaller is better: (-sharing, -availability, bin-pack or spread, name) (R5.1, R5.2)."""
    fractional = 0 < job.gpus < 1
    sharing = fractional and bool(node.shared_room(job.milli_per_pod))
    if job.gpus >= 1:
        available = node.idle_whole() >= job.whole_devices_per_pod
    else:
        available = sharing or node.idle_whole() >= 1
    if policy.gpu_placement == "spread":
        fill = -(node.whole_free / node.gpus) if node.gpus else 0.0
    else:
        fill = node.whole_free
    return (not sharing, not available, fill, node.name)


def best_node(state: ClusterState, job: Job, policy: Policy) -> NodeState | None:
    """The best fitting node for one more pod of `job`, found through the pool indexes."""
    candidates: list[NodeState] = []
    for index in pools_for(state, job):
        if policy.gpu_placement == "spread":
            candidates.extend(state.nodes[n] for n in index.members)
            continue
        candidates.extend(state.nodes[n] for n in index.touched)
        if 0 < job.gpus < 1:
            candidates.extend(state.nodes[n] for n in index.shared)
        need = max(1, job.whole_devices_per_pod) if job.gpus > 0 else 0
        for count in range(need, len(index.buckets)):
            bucket = index.buckets[count]
            if bucket:
                candidates.append(state.nodes[min(bucket)])
                break
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
    fractions take the fullest shared device with room, else a fresh device (R5.4, gpupack);
    with `gpu_sharing="spread"` a fresh device first, then the least used shared one."""
    if job.gpus <= 0:
        return ()
    free = [i for i in range(node.gpus) if node.used[i] == 0]
    # Releasing devices first: a placement made on top of evictions is charged to what they
    # release, so the node keeps its idle devices for the next pod (R1.3, R5.1).
    free.sort(key=lambda i: (not node.releasing[i], i))
    if job.gpus >= 1:
        return tuple(sorted(free[: job.whole_devices_per_pod]))
    shared = node.shared_room(job.milli_per_pod)
    if policy.gpu_sharing == "spread":
        if free:
            return (free[0],)
        return (min(shared, key=lambda i: (node.used[i], i)),)
    if shared:
        return (min(shared, key=lambda i: (-node.used[i], i)),)
    return (free[0],)
