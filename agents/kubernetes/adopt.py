"""Starting, stopping and explaining external workloads (issue 33) on the API server.

- `start` labels each unbound pod of the workload with the job (`allot.io/project`, `allot.io/job`,
  `allot.io/pod-index`) and its placement (the annotations Allot's own pods carry), then binds it
  (`pods/binding`). All of the gang or none: when a bind fails, the pods bound in that attempt
  are deleted (their owner makes new ones, which wait for Allot again) and the others unlabelled.
  A pod already bound where the plan says counts as done, so a start is idempotent.
- `stop` evicts the job's pods, found by its labels in the workload's namespace: a batch/v1 Job
  that owns them all and has no owner of its own is suspended (`suspend`) and later resumed
  (`resume`), as Kueue evicts; any other pod is marked `DisruptionTarget` and deleted.
- `explain` posts an Event (reason `AllotWaiting`, from `allot`) on each unbound pod of a waiting
  workload and sets its `PodScheduled` condition False (reason `Unschedulable`) with the text,
  as kube-scheduler does, when the text changes: the pod's condition is the memory, so an agent
  that restarted does not post again.
- `holder` (issue 40): the live pod of another job that holds a device a new pod would get.
"""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec, PodSpec
from agents.kubernetes import faults, manifests, pods
from agents.kubernetes.external import live

logger = logging.getLogger(__name__)

EVENT_REASON = "AllotWaiting"
CONDITION_REASON = "Unschedulable"
COMPONENT = "allot"
EXPLAIN_LIMIT = 200  # pods told per call: bounded work per cycle, the rest next cycle
LABELS = ("allot.io/project", "allot.io/job", "allot.io/pod-index")
EVICTING = "allot.io/evicting"  # on a Job suspended to evict its pods, until it is resumed


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _name(pod: dict) -> str:
    return pod["metadata"]["name"]


def _unbound(pod: dict) -> bool:
    return (not (pod.get("spec") or {}).get("nodeName") and live(pod)
            and not pod["metadata"].get("deletionTimestamp"))  # fmt: skip


def _ours(job: JobSpec, pod: dict) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return labels.get("allot.io/project") == job.project and labels.get("allot.io/job") == job.name


def placement_notes(job: JobSpec, where: PodSpec) -> dict[str, str]:
    """The annotations of a placed pod, as Allot's own pods carry them."""
    return {
        "allot.io/node": where.node,
        "allot.io/devices": ",".join(map(str, where.devices)),
        "allot.io/share": f"{where.share:g}",
        "allot.io/pods": str(len(job.placement)),
    }


def start(api: client.ApiClient, job: JobSpec, members: list[dict]) -> list[str]:
    """Label and bind the unbound pods of the workload (`members`: its pods in the watch's
    cache) to `job.placement`, all or none; the names of the pods bound now."""
    assert job.external is not None
    core = client.CoreV1Api(api)
    namespace = job.external.namespace
    done: set[int] = set()
    for pod in members:
        labels = pod["metadata"].get("labels") or {}
        node = (pod.get("spec") or {}).get("nodeName")
        index = labels.get("allot.io/pod-index", "")
        if node and live(pod) and _ours(job, pod) and index.isdigit():
            if int(index) < len(job.placement) and job.placement[int(index)].node == node:
                done.add(int(index))
    todo = [index for index in range(len(job.placement)) if index not in done]
    if not todo:
        return []
    # Pods labelled by an earlier attempt first, so a retry reuses them; then by name.
    free = sorted((pod for pod in members if _unbound(pod)),
                  key=lambda pod: (not _ours(job, pod), _name(pod)))  # fmt: skip
    if len(free) < len(todo):
        raise faults.Retry(
            f"{job.external.kind} {namespace}/{job.external.owner} has {len(free)} unbound "
            f"pod(s), {len(todo)} to place: waiting for its owner to make them"
        )
    for node, device in manifests.shared_devices(job):
        pods.reserve(core, node, device)
    labelled: list[str] = []
    bound: list[str] = []
    try:
        for index, pod in zip(todo, free, strict=False):
            where = job.placement[index]
            name = _name(pod)
            patch = {"metadata": {
                "labels": {"allot.io/project": job.project, "allot.io/job": job.name,
                           "allot.io/pod-index": str(index)},
                "annotations": placement_notes(job, where),
            }}  # fmt: skip
            core.patch_namespaced_pod(name, namespace, patch, _request_timeout=10)
            labelled.append(name)
            _bind(core, namespace, name, where.node)
            bound.append(name)
    except Exception:
        for name in bound:
            _quietly(pods.delete_pod, core, namespace, name, 0)
        unlabel = {
            "metadata": {
                "labels": dict.fromkeys(LABELS),
                "annotations": dict.fromkeys(placement_notes(job, PodSpec(""))),
            }
        }
        for name in labelled:
            if name not in bound:
                _quietly(core.patch_namespaced_pod, name, namespace, unlabel)
        raise
    return bound


def _bind(core: client.CoreV1Api, namespace: str, name: str, node: str) -> None:
    """Bind, counting a pod already bound to `node` (a cache that lags behind) as done."""
    try:
        pods.bind(core, namespace, name, node)
    except ApiException as exc:
        if exc.status != 409:
            raise
        answer = core.read_namespaced_pod(name, namespace, _preload_content=False)
        if ((json.loads(answer.data).get("spec")) or {}).get("nodeName") != node:
            raise


def _quietly(call, *args) -> None:
    try:
        call(*args)
    except ApiException as exc:
        if exc.status != 404:
            raise


def stop(api: client.ApiClient, project: str, name: str, namespace: str,
         grace_period_s: int) -> bool:  # fmt: skip
    """Evict the job's pods in the workload's namespace (by label): their owner recreates them,
    and they wait for Allot again.

    Each pod first gets the condition `DisruptionTarget` (reason `PreemptionByScheduler`), as
    kube-scheduler marks the pods it preempts, then is deleted: a Job whose `podFailurePolicy`
    ignores disruptions does not count the eviction against its `backoffLimit`. The Job controller
    still waits its back-off (10 s doubling per failed pod, up to 10 min) before it makes new
    ones, ignored failures included (kubernetes#119378): a Job's pods are therefore evicted by
    suspending the Job instead (`suspend`)."""
    core = client.CoreV1Api(api)
    selector = pods.selector(project, name)
    found = core.list_namespaced_pod(namespace, label_selector=selector).items
    if suspend(api, namespace, found, f"{project}/{name}"):
        for pod in found:  # the Job controller deletes the live ones; the ended hold nothing
            if pod.status.phase in ("Succeeded", "Failed") and not pod.metadata.deletion_timestamp:
                pods.delete_pod(core, namespace, pod.metadata.name, grace_period_s)
        return True
    for pod in found:
        if pod.metadata.deletion_timestamp is not None:
            continue
        condition = {"type": "DisruptionTarget", "status": "True",
                     "reason": "PreemptionByScheduler",
                     "message": f"Allot evicts {project}/{name} (reclaim, preemption or a stop)",
                     "lastTransitionTime": _now()}  # fmt: skip
        try:
            core.patch_namespaced_pod_status(pod.metadata.name, namespace,
                                             {"status": {"conditions": [condition]}})  # fmt: skip
        except ApiException as exc:  # the eviction goes on; the owner may count it a failure
            if exc.status != 404:
                logger.warning("marking %s/%s as disrupted: %s", namespace, pod.metadata.name,
                               faults.describe(exc))  # fmt: skip
    pods.delete_labelled(core.delete_collection_namespaced_pod, core.list_namespaced_pod,
                         core.delete_namespaced_pod, namespace, selector,
                         grace_period_seconds=grace_period_s)  # fmt: skip
    return False


def _job_of(pods_found: list[client.V1Pod]) -> tuple[str, str] | None:
    """(name, uid) of the batch/v1 Job that controls every one of the pods; None when there
    are none, or another owner (or none) controls one of them."""
    owners = set()
    for pod in pods_found:
        refs = [ref for ref in pod.metadata.owner_references or () if ref.controller]
        if len(refs) != 1 or refs[0].kind != "Job" or refs[0].api_version != "batch/v1":
            return None
        owners.add((refs[0].name, refs[0].uid))
    return owners.pop() if len(owners) == 1 else None


def suspend(api: client.ApiClient, namespace: str, pods_found: list[client.V1Pod],
            what: str) -> bool:  # fmt: skip
    """Evict the pods by suspending the batch/v1 Job that owns them all, when that Job has no
    owner of its own (a JobSet's Jobs are its controller's to suspend) and has not finished (a
    finished Job's controller deletes nothing): the Job controller
    deletes its pods itself, counting no failure and no back-off, and makes new ones as soon
    as `resume` lets it (Kueue evicts the same way; the Job's `startTime` starts again). The
    Job is labelled `EVICTING` so that the resume is found after a restart. True when the
    Job is suspended now (False: evict pod by pod)."""
    found = _job_of(pods_found)
    if found is None:
        return False
    name, uid = found
    batch = client.BatchV1Api(api)
    try:
        job = batch.read_namespaced_job(name, namespace, _request_timeout=10)
    except ApiException as exc:
        if exc.status in (403, 404):  # gone, or a role that may not: evict pod by pod
            return False
        raise
    if job.metadata.uid != uid or any(
        ref.controller for ref in job.metadata.owner_references or ()
    ):
        return False
    if any(c.type in ("Complete", "Failed") and c.status == "True"
           for c in (job.status.conditions if job.status else None) or ()):  # fmt: skip
        return False  # a finished Job's controller deletes nothing
    patch = {"metadata": {"labels": {EVICTING: "true"},
                          "annotations": {EVICTING: f"{what} at {_now()}"}},
             "spec": {"suspend": True}}  # fmt: skip
    try:
        batch.patch_namespaced_job(name, namespace, patch, _request_timeout=10)
    except ApiException as exc:
        if exc.status in (403, 404):
            return False
        raise
    logger.info("evicting %s: Job %s/%s suspended until its pods are gone", what, namespace, name)
    return True


def resume(api: client.ApiClient) -> int:
    """Resume each Job `suspend` suspended once the Job controller has taken its pods away
    (its `Suspended` condition is True and no pod is active), or once it finished meanwhile
    (a pod that succeeded after the suspension may end a Job of no completions); a Job someone
    else resumed meanwhile only loses the label. The Job's pods Allot placed that ended instead
    of being deleted are deleted then, as a stop deletes a job's pods. How many Jobs are still
    waiting for their pods to go."""
    batch = client.BatchV1Api(api)
    waiting = 0
    for job in batch.list_job_for_all_namespaces(label_selector=EVICTING,
                                                 _request_timeout=10).items:  # fmt: skip
        status = job.status
        conditions = (status.conditions if status else None) or ()
        suspended = any(c.type == "Suspended" and c.status == "True" for c in conditions)
        finished = any(c.type in ("Complete", "Failed") and c.status == "True"
                       for c in conditions)  # fmt: skip
        if job.spec.suspend and not finished and not (suspended and not (status and status.active)):
            waiting += 1  # its pods are not gone yet
            continue
        namespace = job.metadata.namespace
        _delete_ended(api, namespace, job.metadata.uid)
        again = {"suspend": False} if job.spec.suspend and not finished else {}
        patch = {"metadata": {"labels": {EVICTING: None}, "annotations": {EVICTING: None}},
                 "spec": again}  # fmt: skip
        try:
            batch.patch_namespaced_job(job.metadata.name, namespace, patch,
                                       _request_timeout=10)  # fmt: skip
        except ApiException as exc:
            if exc.status != 404:
                raise
    return waiting


def _delete_ended(api: client.ApiClient, namespace: str, uid: str) -> None:
    """Delete the Job's pods Allot placed (labelled with a job) that have ended."""
    core = client.CoreV1Api(api)
    selector = f"batch.kubernetes.io/controller-uid={uid},allot.io/job"
    for pod in core.list_namespaced_pod(namespace, label_selector=selector,
                                        _request_timeout=10).items:  # fmt: skip
        if pod.status.phase in ("Succeeded", "Failed") and not pod.metadata.deletion_timestamp:
            pods.delete_pod(core, namespace, pod.metadata.name, 0)


def _scheduled_message(pod: dict) -> str | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return condition.get("message") or ""
    return None


def explain(api: client.ApiClient, waiting: Mapping[str, str], cached: Iterable[dict],
            member: Mapping[str, str], told: dict[str, str]) -> int:  # fmt: skip
    """Tell each unbound pod of the waiting workloads why it waits (see the module docstring);
    `told` (pod uid -> text) remembers what was posted before the watch shows it. How many pods
    were told; at most `EXPLAIN_LIMIT`."""
    core = client.CoreV1Api(api)
    count = 0
    for pod in cached:
        uid = pod["metadata"].get("uid", "")
        text = waiting.get(member.get(uid, ""))
        if text is None or not _unbound(pod):
            continue
        if _scheduled_message(pod) == text or told.get(uid) == text:
            told[uid] = text
            continue
        if count >= EXPLAIN_LIMIT:
            break
        namespace, name = pod["metadata"].get("namespace", ""), _name(pod)
        now = _now()
        core.create_namespaced_event(namespace, {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"generateName": f"{name}.", "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace,
                               "name": name, "uid": uid},
            "reason": EVENT_REASON, "message": text, "type": "Warning",
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT, "reportingInstance": socket.gethostname()[:128],
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
        }, _request_timeout=10)  # fmt: skip
        try:
            core.patch_namespaced_pod_status(name, namespace, {"status": {"conditions": [{
                "type": "PodScheduled", "status": "False", "reason": CONDITION_REASON,
                "message": text, "lastTransitionTime": now}]}}, _request_timeout=10)  # fmt: skip
        except ApiException as exc:
            if exc.status != 404:
                raise
        told[uid] = text
        count += 1
    return count


Holders = dict[tuple[str, int], list[dict]]


def holders(cached: Iterable[dict]) -> Holders:
    """The watch's live placed pods by (node, device) they hold (their Allot annotations)."""
    found: Holders = {}
    for pod in cached:
        notes = pod["metadata"].get("annotations") or {}
        node = notes.get("allot.io/node")
        if not node or not live(pod):
            continue
        for device in (notes.get("allot.io/devices") or "").split(","):
            if device.strip().isdigit():
                found.setdefault((node, int(device)), []).append(pod)
    return found


def holder(job: JobSpec, index: Holders) -> str:
    """Issue 40: who holds a device of `job`'s placement: "node X device N is held by pod
    ns/name of job p/j" for the first live pod of another job found there ("" when none).
    Devices shared by fractions (both shares under 1) are not a conflict."""
    found = holding(job, index)
    if found is None:
        return ""
    where, device, pod = found
    labels = pod["metadata"].get("labels") or {}
    return (f"node {where} device {device} is held by pod "
            f"{pod['metadata'].get('namespace')}/{_name(pod)} of job "
            f"{labels.get('allot.io/project')}/{labels.get('allot.io/job')}")  # fmt: skip


def holding(job: JobSpec, index: Holders) -> tuple[str, int, dict] | None:
    """(node, device, pod) of the first live pod of another job on a device of `job`'s
    placement (see `holder`); None when every device is free."""
    for where in job.placement:
        for device in where.devices:
            for pod in index.get((where.node, device), ()):
                if _ours(job, pod):
                    continue
                notes = pod["metadata"].get("annotations") or {}
                if where.share < 1 and float(notes.get("allot.io/share") or 1) < 1:
                    continue
                return where.node, device, pod
    return None
