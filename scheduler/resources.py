"""CPU, memory and GPU memory in plain words: what a job asks for and why a node cannot take it
(issue 26). Pending reasons name the resource that does not fit, e.g. "dgx1-2 has 8 GPUs free
but only 4 of 16 cores free".
"""

from __future__ import annotations

from collections.abc import Iterable

from .model import Job, Node
from .placement import gpus_fit
from .quantity import cores_text, memory_text
from .session import gpus
from .state import NodeState


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
    if job.memory_mib and all(n.memory_mib is not None for n in nodes):
        largest = max(n.memory_mib for n in nodes)
        if job.memory_mib > largest:
            return (f"no node {where} has {memory_text(job.memory_mib)} of memory: the largest "
                    f"has {memory_text(largest)} (R5)")  # fmt: skip
    if job.gpu_memory_mib is not None:
        largest = max((n.gpu_memory_mib for n in nodes if n.gpus), default=0)
        if job.gpu_memory_mib > largest:
            return (f"no GPU {where} has {memory_text(job.gpu_memory_mib)} of memory: the "
                    f"largest has {memory_text(largest)} (R5.5)")  # fmt: skip
    return None


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
    if job.gpu_memory_mib is not None:
        parts.append(f"{memory_text(job.gpu_memory_mib)} of GPU memory")
    elif job.gpus > 0:
        parts.append(gpus(job.milli_per_pod))
    if job.cpu_millis:
        parts.append(cores_text(job.cpu_millis))
    if job.memory_mib:
        parts.append(f"{memory_text(job.memory_mib)} memory")
    return ", ".join(parts) or "nothing"
