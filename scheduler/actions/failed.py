"""Failed devices (issue 26): a job running on a GPU the device plugin or an admin marked failed
is evicted at the start of the cycle and waits in the queue again.

Kubernetes does the same when the NVIDIA device plugin reports a device unhealthy: the pod that
held it fails and its controller makes a new one, which KAI then places on healthy devices (the
failed one is no longer allocatable). So every job type is evicted here, interactive ones too
(their pod is gone either way), keeping its submission order as any eviction does (R1.3). The
failed device itself is held full by the cluster state, so nothing is placed on it and it does
not count in the cluster total (R2.6, scheduler/session.py).
"""

from __future__ import annotations

from ..model import Job
from ..session import Session


def evict_from_failed_devices(session: Session) -> None:
    """Evict every running job that holds a failed device, with a reason naming the GPU and the
    node ("GPU 3 of dgx1-2 failed")."""
    state = session.state
    for job in session.running_untouched():
        failed = failed_devices_of(session, job)
        if not failed:
            continue
        state.unplace(job)
        session.record("evict", job, "device-failure", f"evicted: {failed}; it waits to run again")


def failed_devices_of(session: Session, job: Job) -> str:
    """'GPU 3 of dgx1-2 failed' (or several, comma-separated) for the failed devices the job's
    pods hold; empty when none."""
    said = []
    for pod in session.state.placement.get(job.key, ()):
        node = session.state.nodes.get(pod.node)
        if node is None:
            continue
        said.extend(f"GPU {d} of {pod.node}" for d in pod.devices if d in node.failed)
    if not said:
        return ""
    return f"{', '.join(said)} failed" if len(said) == 1 else f"{', '.join(said)} have failed"
