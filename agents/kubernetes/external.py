"""Pods other tools made that ask for Allot (issue 33): grouped by top owner into Workloads.

A pod is external when it names Allot as its scheduler (`spec.schedulerName: allot`) and is not
one Allot made (`app.kubernetes.io/managed-by=allot`). Its group is found by following
`ownerReferences` to the top owner, as KAI's pod-grouper does:

- a bare Pod, or a ReplicaSet's / Deployment's pod: the pod alone (each placed by itself);
- a batch/v1 Job: the Job, gang = parallelism capped by the completions still to run;
- a Job of a JobSet: the JobSet, gang = the sum over replicatedJobs of replicas x parallelism;
- anything else (StatefulSet, LeaderWorkerSet, RayCluster, PyTorchJob, ...): the top owner,
  gang = the pods that exist.

An annotation overrides the gang: Allot's own `allot.io/gang-size` (on the pod or the top
owner), else KAI's `kai.scheduler/batch-min-member` (on the top owner), else Kueue's
`kueue.x-k8s.io/pod-group-total-count` (on the pod).

A topology constraint (issue 38) is read from the annotations KAI and Kueue users already write,
so a workload made for either keeps its placement under Allot: Allot's own
`allot.io/topology-required` / `allot.io/topology-preferred`, KAI's
`kai.scheduler/topology-required-placement` / `kai.scheduler/topology-preferred-placement` (on
the top owner, as KAI's pod-grouper reads them, or the pod), Kueue's
`kueue.x-k8s.io/podset-required-topology` / `kueue.x-k8s.io/podset-preferred-topology` (on the
pod template, so the pod). Each names a level by its node label key, as Allot's pools list them.

Owners are read with the official client (`CustomObjectsApi`, which reads any group's objects
as plain dicts, built-in `batch/v1` and `apps/v1` included) and cached by uid for `OWNER_TTL_S`
(a Job's status says whether it is complete, so it is read again now and then).

Requests are read as Kubernetes reads them: each container's requests (a limit alone stands for
the request, as the API server defaults it), summed over the containers and restartable init
containers (sidecars), at least the largest init container's, plus the pod's overhead. GPUs are
`nvidia.com/gpu`, or KAI's `gpu-fraction` / `gpu-memory` annotations for a share of one device.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.utils import parse_quantity

from agents.base import ExternalPod, ExternalRef, Workload
from agents.kubernetes import manifests

logger = logging.getLogger(__name__)

OWNER_TTL_S = 10.0
GANG_ANNOTATION = "allot.io/gang-size"
KAI_GANG = "kai.scheduler/batch-min-member"
KUEUE_GANG = "kueue.x-k8s.io/pod-group-total-count"
# Topology by annotation (issue 38), first found wins: (required keys, preferred keys)
TOPOLOGY = {
    "required": ("allot.io/topology-required", "kai.scheduler/topology-required-placement",
                 "kueue.x-k8s.io/podset-required-topology"),
    "preferred": ("allot.io/topology-preferred", "kai.scheduler/topology-preferred-placement",
                  "kueue.x-k8s.io/podset-preferred-topology"),
}  # fmt: skip
FRACTION = "gpu-fraction"
GPU_MEMORY = "gpu-memory"
ENDED = frozenset({"Succeeded", "Failed"})
KINDS = {"build": "build", "interactive": "interactive"}  # priority class -> workload type
ALONE = frozenset({"ReplicaSet", "Deployment"})  # their pods are placed one by one


((MANAGED_KEY, MANAGED_VALUE),) = manifests.MANAGED_BY.items()


def managed(pod: dict) -> bool:
    """True for a pod Allot made (a job's, a session's or a reservation)."""
    return (pod["metadata"].get("labels") or {}).get(MANAGED_KEY) == MANAGED_VALUE


def external(pod: dict) -> bool:
    """True for a pod another tool made that asks for Allot."""
    spec = pod.get("spec") or {}
    return spec.get("schedulerName") == manifests.SCHEDULER_NAME and not managed(pod)


def placed_by_allot(pod: dict) -> bool:
    """True for a pod Allot made or bound (an external pod it labelled with a job)."""
    labels = pod["metadata"].get("labels") or {}
    return managed(pod) or "allot.io/job" in labels


def live(pod: dict) -> bool:
    """True until the pod has ended (a terminating pod still holds what it asked for)."""
    return ((pod.get("status") or {}).get("phase") or "Pending") not in ENDED


# ---------------------------------------------------------------------- requests
def _quantity(value, scale: Decimal) -> Decimal:
    try:
        return parse_quantity(value) * scale if value not in (None, "") else Decimal(0)
    except (ValueError, ArithmeticError):
        return Decimal(0)


def _container(container: dict, name: str, scale: Decimal) -> Decimal:
    resources = container.get("resources") or {}
    requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
    return _quantity(requests.get(name, limits.get(name)), scale)


def request(pod: dict, name: str, scale: Decimal = Decimal(1)) -> Decimal:
    """What the pod asks for of resource `name` as the scheduler counts it (effective request)."""
    spec = pod.get("spec") or {}
    total = sum((_container(c, name, scale) for c in spec.get("containers") or ()), Decimal(0))
    sidecars = Decimal(0)
    largest_init = Decimal(0)
    for init in spec.get("initContainers") or ():
        amount = _container(init, name, scale)
        if init.get("restartPolicy") == "Always":
            sidecars += amount
        else:
            largest_init = max(largest_init, sidecars + amount)
    overhead = _quantity((spec.get("overhead") or {}).get(name), scale)
    return max(total + sidecars, largest_init) + overhead


def limit(pod: dict, name: str, scale: Decimal) -> int | None:
    """The summed limits of the pod's containers; None when one of them has none."""
    total = Decimal(0)
    for container in (pod.get("spec") or {}).get("containers") or ():
        value = ((container.get("resources") or {}).get("limits") or {}).get(name)
        if value in (None, ""):
            return None
        total += _quantity(value, scale)
    return math.ceil(total)


MILLI, MIB = Decimal(1000), Decimal(2**20)


def gpus(pod: dict) -> tuple[float, int | None]:
    """(GPUs, GPU memory in bytes) the pod asks for: whole devices, a fraction or memory."""
    notes = pod["metadata"].get("annotations") or {}
    whole = request(pod, manifests.GPU)
    if whole:
        return float(whole), None
    try:
        fraction = float(notes.get(FRACTION) or 0)
    except ValueError:
        fraction = 0.0
    if 0 < fraction <= 1:
        return fraction, None
    memory = _quantity(notes.get(GPU_MEMORY), Decimal(1)) if notes.get(GPU_MEMORY) else 0
    if memory:  # KAI reads a bare number as MiB
        raw = str(notes[GPU_MEMORY]).strip()
        return 0.0, int(memory * MIB) if raw.isdigit() else int(memory)
    return 0.0, None


def requests_of(pod: dict) -> dict:
    """The Workload fields of what one pod asks for."""
    count, memory = gpus(pod)
    return {
        "gpus": count,
        "gpu_memory_bytes": memory,
        "cpu_millis": math.ceil(request(pod, "cpu", MILLI)),  # a request rounds up, as in
        "memory_bytes": math.ceil(request(pod, "memory")),  # scheduler.quantity
        "cpu_limit_millis": limit(pod, "cpu", MILLI),
        "memory_limit_bytes": limit(pod, "memory", Decimal(1)),
    }


def outside(
    pods: Iterable[dict], ours: set[tuple[str, str, str]] | None = None
) -> dict[str, tuple[int, int, int]]:
    """Per node, the summed (GPUs, CPU millis, memory bytes) of the live pods bound there that
    Allot neither made nor bound (other schedulers, DaemonSets, static pods). With `ours`
    ((namespace, project, job) of the jobs Allot runs), a pod another tool made counts as
    Allot's only when its labels name one of them in that namespace: a label anyone may set
    must not hide a pod's GPUs."""
    found: dict[str, list[Decimal]] = {}
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or not live(pod) or _allots_own(pod, ours):
            continue
        sums = found.setdefault(node, [Decimal(0)] * 3)
        for index, amount in enumerate(_held(pod)):
            sums[index] += amount
    return {node: (int(g), math.ceil(c), math.ceil(m)) for node, (g, c, m) in found.items()}


def _allots_own(pod: dict, ours: set[tuple[str, str, str]] | None) -> bool:
    if ours is None or managed(pod):
        return placed_by_allot(pod)
    metadata = pod["metadata"]
    labels = metadata.get("labels") or {}
    key = (
        metadata.get("namespace", ""),
        labels.get("allot.io/project"),
        labels.get("allot.io/job"),
    )
    return key in ours


_HELD: dict[tuple[str, str], tuple[Decimal, Decimal, Decimal]] = {}


def _held(pod: dict) -> tuple[Decimal, Decimal, Decimal]:
    """(GPUs, CPU millis, memory bytes) one pod requests, kept by uid and resourceVersion: the
    same pods are summed every cycle, and parsing their quantities was most of the cost."""
    metadata = pod["metadata"]
    key = (metadata.get("uid", ""), metadata.get("resourceVersion", ""))
    held = _HELD.get(key)
    if held is None:
        held = (request(pod, manifests.GPU), request(pod, "cpu", MILLI),
                request(pod, "memory"))  # fmt: skip
        if len(_HELD) > 50000:
            _HELD.clear()
        _HELD[key] = held
    return held


# ---------------------------------------------------------------------- owners
def _split(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.rpartition("/")
    return group, version


def plural(kind: str) -> str:
    """The resource name of a kind (Job -> jobs, JobSet -> jobsets, ...)."""
    lower = kind.lower()
    return lower + ("es" if lower.endswith(("s", "x")) else "s")


class Owners:
    """Owner objects read by uid, cached for `ttl_s` (None when gone or unreadable)."""

    def __init__(self, api: client.ApiClient, ttl_s: float = OWNER_TTL_S,
                 monotonic: Callable[[], float] = time.monotonic):  # fmt: skip
        self.custom = client.CustomObjectsApi(api)
        self.ttl_s = ttl_s
        self.monotonic = monotonic
        self._cache: dict[str, tuple[float, dict | None]] = {}
        self._lock = threading.Lock()

    def get(self, namespace: str, ref: dict) -> dict | None:
        """The owner `ref` names (an ownerReferences entry), read at most every `ttl_s`."""
        uid = ref.get("uid", "")
        now = self.monotonic()
        with self._lock:
            cached = self._cache.get(uid)
        if cached is not None and now - cached[0] < self.ttl_s:
            return cached[1]
        group, version = _split(ref.get("apiVersion", ""))
        found: dict | None = None
        if group:  # core owners (a ReplicationController) are rare: the pod stands alone
            try:
                found = self.custom.get_namespaced_custom_object(
                    group, version, namespace, plural(ref["kind"]), ref["name"],
                    _request_timeout=5,
                )  # fmt: skip
            except ApiException as exc:
                if exc.status not in (403, 404):
                    raise
                logger.info("owner %s %s/%s: %s", ref["kind"], namespace, ref["name"], exc.reason)
        if found is not None and found.get("metadata", {}).get("uid") != uid:
            found = None  # a new object of the same name
        with self._lock:
            self._cache[uid] = (now, found)
            if len(self._cache) > 10000:  # forget the oldest half
                for key in sorted(self._cache, key=lambda k: self._cache[k][0])[:5000]:
                    del self._cache[key]
        return found

    def chain(self, pod: dict) -> list[dict]:
        """The pod's owners, nearest first, up to the top one the cluster still has."""
        found: list[dict] = []
        namespace = pod["metadata"].get("namespace", "")
        current = pod
        for _ in range(5):
            refs = current["metadata"].get("ownerReferences") or []
            ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
            if ref is None:
                break
            owner = self.get(namespace, ref)
            if owner is None:
                break
            found.append(owner)
            current = owner
        return found


# ---------------------------------------------------------------------- grouping
def _int(value) -> int | None:
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def _job_gang(job: dict) -> int:
    spec, status = job.get("spec") or {}, job.get("status") or {}
    parallelism = spec.get("parallelism")
    parallelism = 1 if parallelism is None else int(parallelism)
    completions = spec.get("completions")
    if completions is not None:
        parallelism = min(parallelism, int(completions) - int(status.get("succeeded") or 0))
    return max(parallelism, 1)


def _jobset_gang(jobset: dict) -> int:
    total = 0
    for replicated in (jobset.get("spec") or {}).get("replicatedJobs") or ():
        template = ((replicated.get("template") or {}).get("spec")) or {}
        parallelism = template.get("parallelism")
        total += int(replicated.get("replicas") or 1) * (1 if parallelism is None else parallelism)
    return max(total, 1)


def _ended(obj: dict, types: tuple[str, ...]) -> bool:
    return any(c.get("type") in types and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or ())  # fmt: skip


def _time(text: str | None) -> datetime:
    if not text:
        return datetime.now(UTC)
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def group_of(pod: dict, owners: Owners) -> tuple[ExternalRef, dict | None]:
    """The pod's group and its top owner (None when it stands alone)."""
    metadata = pod["metadata"]
    namespace = metadata.get("namespace", "")
    chain = owners.chain(pod)
    if not chain:
        return ExternalRef(namespace, "Pod", metadata["name"], metadata.get("uid", "")), None
    top = chain[-1]
    if chain[0].get("kind") in ALONE:  # each pod its own group, named by its Deployment
        return ExternalRef(namespace, top["kind"], top["metadata"]["name"],
                           metadata.get("uid", "")), None  # fmt: skip
    return ExternalRef(namespace, top["kind"], top["metadata"]["name"], top["metadata"]["uid"]), top


def gang(pods: list[dict], top: dict | None) -> int:
    """How many pods are placed together (see the module docstring)."""
    owner_notes = (top or {}).get("metadata", {}).get("annotations") or {}
    for pod in pods:
        size = _int((pod["metadata"].get("annotations") or {}).get(GANG_ANNOTATION))
        if size:
            return size
    for value in (owner_notes.get(GANG_ANNOTATION), owner_notes.get(KAI_GANG)):
        if _int(value):
            return _int(value)  # type: ignore[return-value]
    for pod in pods:
        size = _int((pod["metadata"].get("annotations") or {}).get(KUEUE_GANG))
        if size:
            return size
    if top is None:
        return 1
    if top.get("kind") == "Job":
        return _job_gang(top)
    if top.get("kind") == "JobSet":
        return _jobset_gang(top)
    return max(len([pod for pod in pods if live(pod)]), 1)


def topology(pods: list[dict], top: dict | None) -> dict[str, str]:
    """{"required": level, "preferred": level} as the annotations say (module docstring): for
    each kind, the first annotation key in Allot's, KAI's, Kueue's order found on the first pod
    or the top owner; an empty value counts as none."""
    notes = [(pod["metadata"].get("annotations") or {}) for pod in pods[:1]]
    notes.append((top or {}).get("metadata", {}).get("annotations") or {})
    found = {}
    for kind, keys in TOPOLOGY.items():
        values = (str(where.get(key) or "").strip() for key in keys for where in notes)
        found[kind] = next((value for value in values if value), "")
    return found


def _complete(pods: list[dict], top: dict | None) -> bool:
    if pods and any(live(pod) for pod in pods):
        return False
    if top is None:
        return bool(pods)
    if top.get("kind") == "Job":
        return _ended(top, ("Complete", "Failed"))
    if top.get("kind") == "JobSet":
        return _ended(top, ("Completed", "Failed"))
    return False


def workloads(cached: Iterable[dict], owners: Owners) -> tuple[list[Workload], dict[str, str]]:
    """The external workloads among the watch's pods, and each external pod's group uid (by
    pod uid)."""
    groups: dict[str, tuple[ExternalRef, dict | None, list[dict]]] = {}
    member: dict[str, str] = {}
    for pod in cached:
        if not external(pod):
            continue
        ref, top = group_of(pod, owners)
        groups.setdefault(ref.uid, (ref, top, []))[2].append(pod)
        member[pod["metadata"].get("uid", "")] = ref.uid
    found = []
    for ref, top, pods in groups.values():
        pods.sort(key=lambda p: p["metadata"]["name"])
        first = pods[0]
        notes = first["metadata"].get("annotations") or {}
        labels = first["metadata"].get("labels") or {}
        priority = (first.get("spec") or {}).get("priorityClassName") or ""
        created = (top or first)["metadata"].get("creationTimestamp")
        found.append(Workload(
            ref=ref,
            size=gang(pods, top),
            pods=tuple(ExternalPod(p["metadata"]["name"], (p.get("spec") or {}).get("nodeName")
                                   or "", (p.get("status") or {}).get("phase") or "Pending")
                       for p in pods),
            created_at=_time(created),
            type=KINDS.get(priority, "train"),
            user=notes.get("allot.io/user") or labels.get("allot.io/user") or "",
            complete=_complete(pods, top),
            **{f"topology_{kind}": level for kind, level in topology(pods, top).items()},
            **requests_of(first),
        ))  # fmt: skip
    found.sort(key=lambda w: (w.created_at, w.ref.namespace, w.ref.owner))
    return found, member
