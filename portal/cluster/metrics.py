"""The agent's latest utilization and GPU memory figures, kept in the cache between cycles.

Utilization changes every few seconds and is derived data, so it is not written to job or node
rows: the cycle stores what its observation saw (`store_observation`), and the overview reads it
(`latest`). The cache is Redis when the portal runs with workers (so the web process sees what
a worker observed) and process memory in the embedded default, where the cycle runs in the web
process itself. Figures older than `MAX_AGE_S` are dropped rather than shown as current.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.core.cache import cache
from django.utils import timezone

from agents.base import Observation

KEY = "allot:metrics:latest"
MAX_AGE_S = 120


@dataclass(frozen=True)
class Metrics:
    """Per-job and per-device utilization (0..1) as the agent last reported it."""

    at: datetime | None = None
    simulated: bool = False
    jobs: dict[str, float] = field(default_factory=dict)  # "project/name" -> utilization
    devices: dict[str, dict[int, float]] = field(default_factory=dict)  # node -> index -> util
    ready: dict[str, bool] = field(default_factory=dict)  # node -> ready, when the agent says
    problem: str = ""  # why the agent could not see the cluster ("" when it could)
    # GPU memory in use, in bytes, where the agent measures it (the DCGM exporter's FB_USED)
    job_memory: dict[str, int] = field(default_factory=dict)  # "project/name" -> bytes
    device_memory: dict[str, dict[int, int]] = field(default_factory=dict)  # node -> index -> B

    def job(self, project: str, name: str) -> float | None:
        """The job's utilization, None when the agent reported none."""
        return self.jobs.get(f"{project}/{name}")

    def job_memory_used(self, project: str, name: str) -> int | None:
        """Bytes of GPU memory in use on the job's devices, None when the agent reported none."""
        return self.job_memory.get(f"{project}/{name}")


def store_observation(observation: Observation) -> None:
    """Keep what `observation` says about utilization for the overview to read."""
    cache.set(
        KEY,
        {
            "at": observation.at,
            "simulated": observation.simulated,
            "jobs": {
                f"{project}/{name}": status.utilization
                for (project, name), status in observation.jobs.items()
                if status.utilization is not None
            },
            "devices": {node.name: dict(node.device_utilization) for node in observation.nodes},
            "ready": {node.name: node.ready for node in observation.nodes},
            "job_memory": {
                f"{project}/{name}": status.gpu_memory_used_bytes
                for (project, name), status in observation.jobs.items()
                if status.gpu_memory_used_bytes is not None
            },
            "device_memory": {
                node.name: dict(node.device_memory_used_bytes) for node in observation.nodes
            },
            "problem": observation.problem,
        },
        timeout=MAX_AGE_S,
    )


def latest() -> Metrics:
    """The newest figures younger than `MAX_AGE_S`, or empty Metrics."""
    stored = cache.get(KEY)
    if not stored or (timezone.now() - stored["at"]).total_seconds() > MAX_AGE_S:
        return Metrics()
    return Metrics(**{"problem": "", **stored})
