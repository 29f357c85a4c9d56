"""Skipping jobs no easier than one that already failed in this action (R9.6)."""

from __future__ import annotations

from ..model import Job


class FailedJobs:
    """Per project and job type, the smallest jobs that failed in this pass. A later job is
    skipped unless it has fewer pods or smaller pods than such a job (KAI's scheduling
    signatures, on by default)."""

    def __init__(self):
        self.failed: dict[tuple[str, str], list[Job]] = {}

    def skip(self, job: Job) -> bool:
        """True when a failed job of the same signature was at most as hard: no more pods, no
        smaller pods in GPUs, CPU, memory or GPU memory (issue 26)."""
        return any(_no_easier(job, other) for other in self.failed.get((job.project, job.type), ()))

    def add(self, job: Job) -> None:
        """Remember a job that found no solution."""
        self.failed.setdefault((job.project, job.type), []).append(job)


def _no_easier(job: Job, other: Job) -> bool:
    if (job.gpu_memory_bytes is None) != (other.gpu_memory_bytes is None):
        return False  # a request by memory and one by fraction do not compare
    return (
        job.pods >= other.pods
        and job.milli_per_pod >= other.milli_per_pod
        and job.cpu_millis >= other.cpu_millis
        and job.memory_bytes >= other.memory_bytes
        and (job.gpu_memory_bytes or 0) >= (other.gpu_memory_bytes or 0)
    )
