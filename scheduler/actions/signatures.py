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
        """True when a failed job of the same signature was at most as hard."""
        for other in self.failed.get((job.project, job.type), ()):
            if not (job.pods < other.pods or job.milli_per_pod < other.milli_per_pod):
                return True
        return False

    def add(self, job: Job) -> None:
        """Remember a job that found no solution."""
        self.failed.setdefault((job.project, job.type), []).append(job)
