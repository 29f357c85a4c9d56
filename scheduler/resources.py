"""CPU, memory and GPU memory in plain words: what a job asks for and why a node cannot take it
(issue 26). Pending reasons name the resource that does not fit, e.g. "dgx1-2 has 8 GPUs free
but only 4 of 16 cores free".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from .model import Job, Node
from .placement import gpus_fit, pools_for
from .quantity import cores_text, memory_text
from .session import Session, gpus
from .state import FULL, NodeState
from .topology import never_fits


def _number(millis: int) -> str:
    return f"{millis / 1000:g}"


def too_large(nodes: Iterable[Node], job: Job, where: str) -> str | None:
    """Why no node of `nodes` could ever hold one pod of `job`, by CPU, memory or GPU memory
    (more than any node or device has, even empty, R5.5), or None. Nodes that do not track a
    resource can hold any amount of it; failed devices and cordoned nodes still count (they
    may come back)."""
    nodes = list(nodes)
    if not nodes:
        return None
    if job.cpu_millis and all(n.cpu_millis is not None for n in nodes):
        largest = max(n.cpu_millis for n in nodes)
        if job.cpu_millis > largest:
            return (f"no node {where} has {cores_text(job.cpu_millis)}: the largest has "
                    f"{cores_text(largest)} (R5)")  # fmt: skip
    if job.memory_bytes and all(n.memory_bytes is not None for n in nodes):
        largest = max(n.memory_bytes for n in nodes)
        if job.memory_bytes > largest:
            return (f"no node {where} has {memory_text(job.memory_bytes)} of memory: the largest "
                    f"has {memory_text(largest)} (R5)")  # fmt: skip
    if job.gpu_memory_bytes is not None:
        largest = max((n.gpu_memory_bytes for n in nodes if n.gpus), default=0)
        if job.gpu_memory_bytes > largest:
            return (f"no GPU {where} has {memory_text(job.gpu_memory_bytes)} of memory: the "
                    f"largest has {memory_text(largest)} (R5.5)")  # fmt: skip
    return None


def unplaceable(session: Session, job: Job) -> str | None:
    """Why no eligible node of the job's pools could hold it even with every node empty, or None
    when some could: no healthy GPU, a pod wider than every node's healthy GPUs ("no node in the
    cluster has 8 healthy GPUs: n1 has 7 (GPU 3 failed) (R5.3)"), more CPU, memory or GPU memory
    than any node or device has (:func:`too_large`), no node with all of them at once, or a gang
    whose pods do not all fit the emptied cluster (R6.1). No eviction or move can help such a
    job, so reclaim, preempt and consolidation do not try, and allocate's reason for it stays
    (`Session.hard_blocked`). Cordoned and not-ready nodes, and failed devices, are out: they
    take no pods this cycle. A required topology level none of its pools has, or whose every
    domain is too small even empty, is such a reason too (R23.4). Computed once per job shape
    and cycle."""
    pools = session.queue(job).node_pools
    shape = (pools, job.gpus, job.pods, job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes)
    shape += (job.topology_required,)
    cache = session.never_fits
    if shape not in cache:
        cache[shape] = _unplaceable(session, job, pools) or never_fits(session.state, job)
    return cache[shape]


def _unplaceable(session: Session, job: Job, pools: tuple[str, ...]) -> str | None:
    where = f"in pool {', '.join(pools)}" if pools else "in the cluster"
    state = session.state
    nodes = [state.nodes[name] for index in pools_for(state, job) for name in index.members]
    largest = max((n.gpus - len(n.failed) for n in nodes), default=0)
    if not largest and (job.whole or job.shared):
        return f"no ready node {where} has a healthy GPU (R5)"
    if not nodes:
        return f"no ready node {where} (R5)"
    if job.whole and job.whole_devices_per_pod > largest:
        return _too_few_healthy(nodes, job, where)
    if job.pods == 1 and not (
        job.cpu_millis or job.memory_bytes or job.gpu_memory_bytes is not None
    ):
        return None  # one pod of GPUs only: a node with enough healthy GPUs holds it
    big = too_large([session.nodes[n.name] for n in nodes], job, where)
    if big:
        return big
    kinds = Counter((n.gpus - len(n.failed), n.cpu_total, n.memory_total, n.gpu_memory)
                    for n in nodes)  # fmt: skip
    held = {kind: empty_pods(job, *kind) for kind in kinds}
    if not any(held.values()):
        return f"no node {where} has room for a pod of {asked(job)}, even empty (R5)"
    total = sum(held[kind] * count for kind, count in kinds.items())
    if total < job.pods:
        return (f"the {job.pods} pods of {asked(job)} each cannot all fit {where}: with every "
                f"node empty it holds {total} of them (R6.1)")  # fmt: skip
    return None


def _too_few_healthy(nodes: list[NodeState], job: Job, where: str) -> str:
    """A whole-GPU pod wider than every eligible node's healthy GPUs (R5.3), naming the node
    that failed devices keep from holding it, if any."""
    per_pod = job.whole_devices_per_pod
    hurt = [n for n in nodes if n.gpus >= per_pod]
    if not hurt:
        return f"no node {where} has {gpus(job.milli_per_pod)} (R5.3)"
    best = min(hurt, key=lambda n: (len(n.failed) - n.gpus, n.name))
    failed = ", ".join(str(d) for d in best.failed)
    devices = f"GPU{'s' if len(best.failed) > 1 else ''} {failed} failed"
    return (f"no node {where} has {per_pod} healthy GPUs: {best.name} has "
            f"{best.gpus - len(best.failed)} ({devices}) (R5.3)")  # fmt: skip


def empty_pods(job: Job, healthy: int, cpu: int | None, memory: int | None,
               gpu_memory: int) -> int:  # fmt: skip
    """How many pods of `job` an empty node with `healthy` devices of `gpu_memory` bytes and this
    allocatable CPU and memory (None: not tracked) holds, capped at the job's pods."""
    if job.whole:
        count = healthy // job.whole_devices_per_pod
    elif job.shared:
        if job.gpu_memory_bytes is not None:
            milli = -(-job.gpu_memory_bytes * FULL // max(1, gpu_memory))
        else:
            milli = job.milli_per_pod
        count = 0 if milli > FULL else healthy * (FULL // milli)
    else:
        count = job.pods
    if job.cpu_millis and cpu is not None:
        count = min(count, cpu // job.cpu_millis)
    if job.memory_bytes and memory is not None:
        count = min(count, memory // job.memory_bytes)
    return min(count, job.pods)


def shortfall(node: NodeState, job: Job) -> str:
    """What of `node` the pod does not fit, for a node whose GPUs would fit it: "dgx1-2 has 8
    GPUs free but only 4 of 16 cores free", "... but only 12 GiB of 64 GiB memory free" (a
    CPU-only pod: "dgx1-2 has only 4 of 16 cores free")."""
    short = node.short_of(job)
    if short == "cpu":
        lack = f"only {_number(node.cpu_free)} of {cores_text(node.cpu_total)} free"
    else:
        lack = (
            f"only {memory_text(node.memory_free)} of {memory_text(node.memory_total)} memory free"
        )
    if not (job.whole or job.shared):
        return f"{node.name} has {lack}"
    free = node.whole_free
    gpus = f"{free} GPU{'s' if free != 1 else ''} free" if free else "GPU room"
    return f"{node.name} has {gpus} but {lack}"


def blocked_by_resources(nodes: Iterable[NodeState], job: Job) -> str | None:
    """For a job that fits nowhere: the eligible node whose GPUs would take a pod but whose CPU
    or memory does not, said as :func:`shortfall` (the one with the most free GPUs, then the
    most CPU free, then by name), or None when no node is blocked by CPU or memory alone."""
    blocked = [n for n in nodes if n.eligible and gpus_fit(n, job) and n.short_of(job)]
    if not blocked:
        return None
    best = min(blocked, key=lambda n: (-n.whole_free, -(n.cpu_free or 0), n.name))
    return shortfall(best, job)


def asked(job: Job) -> str:
    """One pod's request in words: '1 GPU, 8 cores, 64 GiB memory' (issue 26)."""
    parts = []
    if job.gpu_memory_bytes is not None:
        parts.append(f"{memory_text(job.gpu_memory_bytes)} of GPU memory")
    elif job.gpus > 0:
        parts.append(gpus(job.milli_per_pod))
    if job.cpu_millis:
        parts.append(cores_text(job.cpu_millis))
    if job.memory_bytes:
        parts.append(f"{memory_text(job.memory_bytes)} memory")
    return ", ".join(parts) or "nothing"
