"""A job's CPU, memory and GPU-memory requests as stored (issue 26): defaults and fractions.

A field the submission leaves out takes the project's default (`Project.default_cpu_millis`,
`default_memory_bytes`), else the cluster's (ALLOT_DEFAULT_CPU, ALLOT_DEFAULT_MEMORY), else 0. A
limit given without a request makes the request that default capped at the limit, or the limit
itself when there is no default (Kubernetes sets the request to the limit then). A request by GPU
memory (R3.4, R5.5) stores `gpus` as its share of the smallest device in the cluster, rounded up
to the hundredth and at most 1: what quota and fair share count (as KAI counts it: a request of a
whole device's memory is one GPU, issue 33, not the 0.99 it was counted before). Memory is in
bytes (issue 33).
"""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings

from portal.tenancy.models import Project

SHARE_MAX = Decimal(1)  # one device: a request by GPU memory never spans two (R5.5)


def default_cpu_millis(project: Project) -> int:
    """CPU per pod for a job of `project` that does not say: the project's, else the cluster's."""
    if project.default_cpu_millis is not None:
        return project.default_cpu_millis
    return settings.ALLOT_DEFAULT_CPU_MILLIS


def default_memory_bytes(project: Project) -> int:
    """Memory per pod for a job of `project` that does not say."""
    if project.default_memory_bytes is not None:
        return project.default_memory_bytes
    return settings.ALLOT_DEFAULT_MEMORY_BYTES


def request_with_default(given: int | None, limit: int | None, default: int) -> int:
    """The request to store: as given, else the default capped at the limit, else the limit."""
    if given is not None:
        return given
    if limit is not None:
        return min(default, limit) if default else limit
    return default


def gpu_memory_share(gpu_memory_bytes: int, smallest_device_bytes: int | None) -> Decimal:
    """`gpus` for a request by GPU memory: its share of the smallest device, rounded up to the
    hundredth (in integers: exact), between 0.01 and 1 (1 for all of the smallest device's
    memory or more, and without nodes)."""
    if not smallest_device_bytes:
        return SHARE_MAX
    hundredths = -(-gpu_memory_bytes * 100 // smallest_device_bytes)
    return min(max(Decimal(hundredths) / 100, Decimal("0.01")), SHARE_MAX)
