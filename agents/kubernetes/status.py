"""Pods as the cluster reports them, turned into Allot's job phases (pure functions on dicts).

A pod's phase and its container states decide:

- Pending, or a container still waiting in ContainerCreating / PodInitializing -> ContainerCreating.
- A container that cannot start or keeps dying is a failure the user must act on, so the job
  is Failed with the reason in its event: image pull errors (ErrImagePull, ImagePullBackOff,
  InvalidImageName), bad configuration (CreateContainerConfigError, CreateContainerError),
  CrashLoopBackOff, and a container the kernel killed for memory (OOMKilled, also when it was
  last terminated so and is now restarting).
- Running with every container running -> Running; Succeeded -> Succeeded; Failed -> Failed with
  the container's reason and exit code.

A job's phase is its slowest pod's, except that one failed pod fails the whole job (a gang runs
all or nothing, R6.1): any Failed -> Failed; all Succeeded -> Succeeded; every pod Running (or
already Succeeded) -> Running; else ContainerCreating. Restarts are summed over the containers.
`complete` says whether all of a job's pods were created and bound: a process that died in the
middle of a start leaves a job that is not.
"""

from __future__ import annotations

from agents.base import JobStatus, Phase, PodStatus

FATAL_WAITING = frozenset({
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
    "CreateContainerConfigError", "CreateContainerError", "CrashLoopBackOff",
})  # fmt: skip


def _containers(pod: dict) -> list[dict]:
    return (pod.get("status") or {}).get("containerStatuses") or []


def pod_phase(pod: dict) -> tuple[Phase, str]:
    """(Allot phase, reason in plain words) of one pod."""
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    name = pod["metadata"]["name"]
    for container in _containers(pod):
        state = container.get("state") or {}
        waiting = state.get("waiting") or {}
        last = (container.get("lastState") or {}).get("terminated") or {}
        if waiting.get("reason") in FATAL_WAITING:
            detail = waiting.get("message") or ""
            if waiting["reason"] == "CrashLoopBackOff" and last.get("reason"):
                detail = f"last exit: {last['reason']} (exit code {last.get('exitCode')})"
            return "Failed", f"pod {name}: {waiting['reason']}" + (f": {detail}" if detail else "")
        if last.get("reason") == "OOMKilled" and phase != "Succeeded":
            code = last.get("exitCode")
            return "Failed", f"pod {name}: OOMKilled, out of memory (exit code {code})"
    if phase == "Succeeded":
        return "Succeeded", ""
    if phase == "Failed":
        return "Failed", f"pod {name}: {_terminated(pod) or status.get('reason') or 'failed'}"
    if phase == "Running":
        containers = _containers(pod)
        if containers and all("running" in (c.get("state") or {}) for c in containers):
            return "Running", ""
        for container in containers:
            terminated = (container.get("state") or {}).get("terminated") or {}
            if terminated.get("reason") == "OOMKilled":
                return "Failed", f"pod {name}: OOMKilled, out of memory (exit code 137)"
    return "ContainerCreating", ""


def _terminated(pod: dict) -> str:
    for container in _containers(pod):
        terminated = (container.get("state") or {}).get("terminated") or {}
        if terminated:
            reason = terminated.get("reason") or "Error"
            return f"{reason} (exit code {terminated.get('exitCode')})"
    return ""


def restarts(pod: dict) -> int:
    """Container restarts of one pod."""
    return sum(int(c.get("restartCount") or 0) for c in _containers(pod))


def job_status(project: str, name: str, pods: list[dict]) -> JobStatus:
    """The job's status from all its pods (ordered by pod index)."""
    pods = sorted(pods, key=lambda p: int(p["metadata"]["labels"].get("allot.io/pod-index", 0)))
    seen = [(pod, *pod_phase(pod)) for pod in pods]
    phases = {phase for _, phase, _ in seen}
    if "Failed" in phases:
        phase: Phase = "Failed"
    elif phases == {"Succeeded"}:
        phase = "Succeeded"
    elif phases <= {"Running", "Succeeded"} and phases:
        phase = "Running"
    else:
        phase = "ContainerCreating"
    message = "; ".join(reason for _, pod_phase_, reason in seen if reason and pod_phase_ == phase)
    return JobStatus(
        project=project,
        name=name,
        phase=phase,
        pods=tuple(
            PodStatus(index, (pod.get("spec") or {}).get("nodeName") or "", pod_phase_)
            for index, (pod, pod_phase_, _) in enumerate(seen)
        ),
        message=message,
        restarts=sum(restarts(pod) for pod in pods),
    )


def complete(pods: list[dict]) -> bool:
    """True when every pod of the job was created and bound: as many as its gang's size (the
    `allot.io/pods` annotation; pods without it count as whole) and none still unbound."""
    size = max((int((pod["metadata"].get("annotations") or {}).get("allot.io/pods") or 0)
                for pod in pods), default=0)  # fmt: skip
    unbound = [pod for pod in pods if not (pod.get("spec") or {}).get("nodeName")
               and (pod.get("status") or {}).get("phase", "Pending") == "Pending"]  # fmt: skip
    return len(pods) >= size and not unbound
