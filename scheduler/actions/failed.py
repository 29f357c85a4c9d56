"""Failed devices (issue 26): a job running on a GPU the device plugin or an admin marked failed
leaves it within the cycle, restarted on healthy devices when the cycle finds them, else back in
the queue.

Kubernetes does the same when the NVIDIA device plugin reports a device unhealthy: the pod that
held it fails and its controller makes a new one, which KAI then places on healthy devices (the
failed one is no longer allocatable). So every job type leaves here, interactive ones too (their
pod is gone either way), keeping its submission order as any eviction does (R1.3). The failed
device itself is held full by the cluster state, so nothing is placed on it and it does not count
in the cluster total (R2.6, scheduler/session.py).

Such a job is not a victim: its pods are dead, its project did not give its GPUs up. So within
the cycle it is served before anyone is lent what it held (issue 34 item 12: after a GPU failed,
an over-quota `fill-10` started on the failed job's other device and was reclaimed 4 s later):

- F1 (`take_off_failed_devices`, before allocate): the job restarts at once on free healthy
  devices (its own released ones included), a ``move``. When it does not fit, it keeps its healthy
  devices through allocate and consolidation, so nothing is lent on them.
- F2 (`release_stranded`, before reclaim): it lets them go and waits as a pending job of its
  project in its own order, so reclaim (R9) and preempt (R10) may restart it on them and on what
  they take back, in this cycle.
- F3 (`settle_stranded`, after preempt): one an action restarted is a ``move`` (its old pods are
  gone); one none did is evicted and waits, as before.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import Job
from ..placement import place_job
from ..session import Session, nodes_of

EVICTED = "evicted: {}; it waits to run again"


def take_off_failed_devices(session: Session) -> list[tuple[Job, str]]:
    """F1: move every running job that holds a failed device to healthy free devices when they
    hold it ("moved to dgx1-1: GPU 3 of dgx1-2 failed (R2.6)"); return the ones that did not fit,
    with what failed, still on their devices and out of every action's reach until F2."""
    state = session.state
    stranded: list[tuple[Job, str]] = []
    if not any(node.failed for node in state.nodes.values()):
        return stranded  # the common case: no job to look at (a pass over all was 7% of a cycle)
    for job in session.running_untouched():
        failed = failed_devices_of(session, job)
        if not failed:
            continue
        checkpoint = state.checkpoint()
        state.unplace(job)
        placement = place_job(state, job, session.policy)
        if placement is not None:
            state.commit(checkpoint)
            reason = f"moved to {nodes_of(placement)}: {failed} (R2.6)"
            session.record("move", job, "device-failure", reason, placement)
            continue
        state.rollback(checkpoint)  # keeps its devices: allocate lends nothing of them (F1)
        session.touched.add(job.key)
        stranded.append((job, failed))
    return stranded


def release_stranded(session: Session, stranded: list[tuple[Job, str]]) -> None:
    """F2: the stranded jobs let their devices go (releasing, R1.3) and wait as pending jobs."""
    for job, failed in stranded:
        session.state.unplace(job)
        session.record("evict", job, "device-failure", EVICTED.format(failed))
        session.touched.discard(job.key)  # pending again: reclaim and preempt may restart it


def settle_stranded(session: Session, stranded: list[tuple[Job, str]]) -> None:
    """F3: a stranded job an action restarted is moved there (its eviction and start become one
    ``move``); the others stay evicted."""
    for job, failed in stranded:
        session.touched.add(job.key)
        started = [i for i, d in enumerate(session.decisions)
                   if d.job == job.key and d.kind == "start"]  # fmt: skip
        if not started:
            continue
        start = session.decisions[started[-1]]
        restarted = start.reason.replace("started", "restarted", 1)
        session.decisions[started[-1]] = replace(
            start, kind="move", action="device-failure", reason=f"moved: {failed}; {restarted}"
        )
        session.decisions[:] = [
            d for d in session.decisions if not (d.job == job.key and d.kind == "evict")
        ]


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
