"""The mutable cluster state of one cycle, with checkpoint and rollback (KAI's `Statement`).

Devices hold thousandths of a GPU. A device is *idle* when nothing uses it, *releasing* when an
eviction earlier in this cycle emptied it (R1.3), and *shared* while it holds fractions (R5.4).
Every change goes through :meth:`ClusterState._set_device`, :meth:`_set_placement`,
:meth:`_set_resources` (a node's free CPU and memory, issue 26) or the queue counters, each of
which records how to undo itself, so an action can try a placement or a victim
set and roll it back. Nodes are indexed by their count of free whole devices so that the fullest
fitting node (R5.2) is found without scanning the cluster.

A failed device (`Node.failed_devices`) is held full from the start, so nothing is placed on it
and it never counts as free; the failed-device action evicts what ran on it (issue 26). A device
that a pod Allot did not place holds (`Node.outside_devices`, R2.6) is held full the same way,
and what such pods request of CPU and memory is not free; nothing is evicted for them.
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Job, JobKey, Node, PodPlacement
from .queues import QueueState, leaf_of

FULL = 1000


class NodeState:
    """One node's devices, free CPU and memory, and derived counters.

    `cpu_free`/`memory_free` are None when the node does not track that resource (never the
    limiting one); `cpu_total`/`memory_total` are its allocatable amounts."""

    __slots__ = (
        "cpu_free",
        "cpu_total",
        "eligible",
        "failed",
        "gpu_memory",
        "gpus",
        "idle",
        "memory_free",
        "memory_total",
        "n_releasing",
        "n_shared",
        "name",
        "pool",
        "releasing",
        "used",
        "whole_free",
    )

    def __init__(self, node: Node):
        self.name = node.name
        self.pool = node.pool
        self.gpus = node.gpus
        self.eligible = node.ready and node.schedulable
        self.used = [0] * node.gpus
        self.releasing = [False] * node.gpus
        self.whole_free = node.gpus
        # Device counts kept by ClusterState as devices change (read for every node tried).
        self.idle = node.gpus  # free and not releasing
        self.n_releasing = 0
        self.n_shared = 0  # holding fractions with room left
        self.gpu_memory = node.gpu_memory_bytes
        self.cpu_total = node.cpu_millis
        self.memory_total = node.memory_bytes
        self.cpu_free = _less(node.cpu_millis, node.outside_cpu_millis)
        self.memory_free = _less(node.memory_bytes, node.outside_memory_bytes)
        self.failed = tuple(sorted({d for d in node.failed_devices if 0 <= d < node.gpus}))
        for device in (*self.failed, *node.outside_devices):
            if 0 <= device < node.gpus:  # never free, never shared: out of placement
                self.used[device] = FULL

    def recount(self) -> None:
        """Derive the counters from the devices (after loading the snapshot's placements)."""
        self.whole_free = sum(1 for u in self.used if u == 0)
        pairs = zip(self.used, self.releasing, strict=True)
        self.idle = sum(1 for u, r in pairs if u == 0 and not r)
        self.n_releasing = sum(self.releasing)
        self.n_shared = sum(1 for u in self.used if 0 < u < FULL)

    def idle_whole(self) -> int:
        """Free devices that are not releasing (R5.1 availability)."""
        return self.idle

    def has_releasing(self) -> bool:
        """True when an eviction of this cycle left a device free here."""
        return self.n_releasing > 0

    def shared_room(self, milli: int) -> list[int]:
        """Indexes of shared devices with room for `milli` (R5.4)."""
        return [i for i, u in enumerate(self.used) if 0 < u < FULL and FULL - u >= milli]

    def has_shared_room(self) -> bool:
        """True when some shared device can take more fractions."""
        return self.n_shared > 0

    def device_milli(self, job: Job) -> int:
        """Thousandths of one of this node's devices a pod of `job` takes: a whole device, the
        fraction (R5.4), or for a GPU-memory request its memory over this node's device memory
        rounded up (R5.5; more than FULL when a device is too small)."""
        if job.gpu_memory_bytes is not None:
            return -(-job.gpu_memory_bytes * FULL // max(1, self.gpu_memory))
        return FULL if job.whole else job.milli_per_pod

    def short_of(self, job: Job) -> str | None:
        """'cpu' or 'memory' when one more pod of `job` does not fit this node's free CPU or
        memory (untracked never limits), else None."""
        if job.cpu_millis and self.cpu_free is not None and job.cpu_millis > self.cpu_free:
            return "cpu"
        if (
            job.memory_bytes
            and self.memory_free is not None
            and job.memory_bytes > self.memory_free
        ):
            return "memory"
        return None


def _less(total: int | None, taken: int) -> int | None:
    """What is left of a tracked amount once pods Allot did not place took theirs (R2.6)."""
    return None if total is None else max(0, total - taken)


class PoolIndex:
    """Eligible nodes of one pool by free whole devices; nodes touched by evictions apart."""

    def __init__(self, max_gpus: int):
        self.buckets: list[set[str]] = [set() for _ in range(max_gpus + 1)]
        self.touched: set[str] = set()
        self.shared: set[str] = set()
        self.members: set[str] = set()
        self.free_milli = 0  # idle + releasing thousandths over the pool's devices
        self.largest = 0  # GPUs of the pool's largest eligible node


class ClusterState:
    """Nodes, queues and job placements of one cycle, changed only through journaled steps."""

    def __init__(
        self,
        nodes: Iterable[Node],
        queues: dict[str, QueueState],
        jobs: Iterable[Job],
        topology: dict[str, tuple[str, ...]] | None = None,
    ):
        nodes = tuple(nodes)
        self.nodes: dict[str, NodeState] = {n.name: NodeState(n) for n in nodes}
        # Topology (R23.1): levels per pool and each node's labels; domains are cached by
        # scheduler/topology.py (they never change within a cycle).
        self.topology = topology or {}
        self.labels: dict[str, dict[str, str]] = {n.name: dict(n.labels) for n in nodes}
        self.domain_cache: dict[tuple, list] = {}
        self.queues = queues
        self.jobs: dict[JobKey, Job] = {}
        self.placement: dict[JobKey, tuple[PodPlacement, ...]] = {}
        # What each user holds in each project (R21.1-R21.3): (project, user) -> [GPUs in
        # thousandths, running jobs, running interactive jobs], counted once here and moved
        # with every placement change (rollback included), so a per-user limit check costs
        # a lookup instead of a pass over the snapshot's jobs.
        self.user_held: dict[tuple[str, str], list[int]] = {}
        self.journal: list[tuple] = []
        max_gpus = max((n.gpus for n in self.nodes.values()), default=0)
        self.max_gpus = max_gpus
        self.pools: dict[str, PoolIndex] = {}
        for job in jobs:
            self.jobs[job.key] = job
            if job.placement:
                self._load_placement(job)
        for node in self.nodes.values():
            node.recount()
            if node.eligible:
                index = self.pools.setdefault(node.pool, PoolIndex(max_gpus))
                index.members.add(node.name)
                index.free_milli += node.gpus * FULL - sum(node.used)
                index.largest = max(index.largest, node.gpus - len(node.failed))
                index.buckets[node.whole_free].add(node.name)
                if node.has_shared_room():
                    index.shared.add(node.name)

    # ----------------------------------------------------------------------------- loading
    def _load_placement(self, job: Job) -> None:
        """Account a job running at snapshot time on its devices, before the node indexes are
        built (no journal: this is the starting point)."""
        for pod in job.placement:
            node = self.nodes.get(pod.node)
            if node is None:
                continue
            milli = pod_milli(job, pod)
            for device in pod.devices:
                if device < node.gpus:
                    node.used[device] += milli
            if node.cpu_free is not None:
                node.cpu_free -= job.cpu_millis
            if node.memory_free is not None:
                node.memory_free -= job.memory_bytes
        self._tally_user(job.key, job.key in self.placement, True)
        self.placement[job.key] = job.placement
        self._count(job, +len(job.placement), journal=False)

    # ----------------------------------------------------------------------------- journal
    def checkpoint(self) -> int:
        """A point to roll back to."""
        return len(self.journal)

    def rollback(self, checkpoint: int) -> None:
        """Undo every change made since `checkpoint`, newest first."""
        while len(self.journal) > checkpoint:
            entry = self.journal.pop()
            kind = entry[0]
            if kind == "device":
                _, node, device, used, releasing = entry
                self._apply_device(node, device, used, releasing)
            elif kind == "placement":
                _, key, old = entry
                self._tally_user(key, key in self.placement, old is not None)
                if old is None:
                    self.placement.pop(key, None)
                else:
                    self.placement[key] = old
            elif kind == "count":
                _, job, pods = entry
                self._count(self.jobs[job], -pods, journal=False)
            elif kind == "resources":
                _, node, cpu, memory = entry
                node.cpu_free, node.memory_free = cpu, memory

    def commit(self, checkpoint: int) -> None:
        """Keep the changes since `checkpoint`; forget how to undo them at the outermost level."""
        if checkpoint == 0:
            self.journal.clear()

    # ----------------------------------------------------------------------------- devices
    def _apply_device(self, node: NodeState, device: int, used: int, releasing: bool) -> None:
        old, was_releasing = node.used[device], node.releasing[device]
        was_free = old == 0
        delta = old - used
        node.used[device] = used
        releasing = releasing if used == 0 else False
        node.releasing[device] = releasing
        now_free = used == 0
        node.idle += (now_free and not releasing) - (was_free and not was_releasing)
        node.n_releasing += releasing - was_releasing
        node.n_shared += (0 < used < FULL) - (0 < old < FULL)
        index = self.pools.get(node.pool) if node.eligible else None
        if was_free != now_free:
            if index is not None and node.name not in index.touched:
                index.buckets[node.whole_free].discard(node.name)
            node.whole_free += 1 if now_free else -1
            if index is not None and node.name not in index.touched:
                index.buckets[node.whole_free].add(node.name)
        if index is None:
            return
        index.free_milli += delta
        self._reindex_touched(node, index)
        if node.has_shared_room():
            index.shared.add(node.name)
        else:
            index.shared.discard(node.name)

    def _reindex_touched(self, node: NodeState, index: PoolIndex) -> None:
        releasing = node.has_releasing()
        if releasing and node.name not in index.touched:
            index.buckets[node.whole_free].discard(node.name)
            index.touched.add(node.name)
        elif not releasing and node.name in index.touched:
            index.touched.discard(node.name)
            index.buckets[node.whole_free].add(node.name)

    def _set_resources(self, node: NodeState, job: Job, pods: int) -> None:
        """Take (pods > 0) or give back (pods < 0) that many pods' CPU and memory on the node."""
        if not (job.cpu_millis or job.memory_bytes):
            return
        self.journal.append(("resources", node, node.cpu_free, node.memory_free))
        if node.cpu_free is not None:
            node.cpu_free -= pods * job.cpu_millis
        if node.memory_free is not None:
            node.memory_free -= pods * job.memory_bytes

    def _set_device(self, node: NodeState, device: int, used: int, releasing: bool) -> None:
        self.journal.append(("device", node, device, node.used[device], node.releasing[device]))
        self._apply_device(node, device, used, releasing)

    # ----------------------------------------------------------------------------- jobs
    def _count(self, job: Job, pods: int, journal: bool = True) -> None:
        """Add (pods > 0) or remove (pods < 0) that many of the job's pods to its leaf's (its
        project's, or its user's with user fair share, R21.4) and every ancestor's allocated."""
        amount = pods * job.milli_per_pod
        cpu, memory = pods * job.cpu_millis, pods * job.memory_bytes
        queue = leaf_of(self.queues, job)
        while queue is not None:
            queue.allocated += amount
            queue.allocated_cpu += cpu
            queue.allocated_memory += memory
            if not job.preemptible:
                queue.allocated_np += amount
            queue = queue.parent
        if journal:
            self.journal.append(("count", job.key, pods))

    def _tally_user(self, key: JobKey, was: bool, now: bool) -> None:
        """Move the job's user's running tally when the job starts or stops holding a
        placement (R21.1-R21.3); a move from one placement to another changes nothing."""
        if was == now:
            return
        job = self.jobs[key]
        sign = 1 if now else -1
        held = self.user_held.setdefault((job.project, job.user), [0, 0, 0])
        held[0] += sign * job.milli_total
        held[1] += sign
        held[2] += sign * (not job.preemptible)

    def _set_placement(self, key: JobKey, value: tuple[PodPlacement, ...] | None) -> None:
        self.journal.append(("placement", key, self.placement.get(key)))
        self._tally_user(key, key in self.placement, value is not None)
        if value is None:
            self.placement.pop(key, None)
        else:
            self.placement[key] = value

    def place(self, job: Job, placement: tuple[PodPlacement, ...]) -> None:
        """Put the job's pods on their devices and count its GPUs (journaled)."""
        for pod in placement:
            node = self.nodes[pod.node]
            for device in pod.devices:
                self._set_device(node, device, node.used[device] + pod_milli(job, pod), False)
            self._set_resources(node, job, +1)
        self._set_placement(job.key, placement)
        self._count(job, +len(placement))

    def unplace(self, job: Job) -> tuple[PodPlacement, ...]:
        """Take the job off its devices; emptied devices become releasing (journaled)."""
        placement = self.placement[job.key]
        for pod in placement:
            node = self.nodes.get(pod.node)
            if node is None:
                continue
            for device in pod.devices:
                if device < node.gpus:
                    used = max(0, node.used[device] - pod_milli(job, pod))
                    self._set_device(node, device, used, used == 0)
            self._set_resources(node, job, -1)
        self._set_placement(job.key, None)
        self._count(job, -len(placement))
        return placement

    def is_running(self, key: JobKey) -> bool:
        """True when the job holds a placement in the current state."""
        return key in self.placement


def pod_milli(job: Job, pod: PodPlacement) -> int:
    """Thousandths one pod holds on each of its devices (a GPU-memory pod: its share of the
    device it was placed on, R5.5)."""
    if job.gpu_memory_bytes is not None:
        return round(pod.share * FULL)
    if job.gpus >= 1:
        return FULL
    return round(pod.share * FULL) if pod.share < 1 else job.milli_per_pod
