"""Starting and stopping a job's pods on the cluster, all or nothing.

`start_job` makes sure the project's namespace exists, holds every shared device with a
reservation pod (KAI's fractions), then creates and binds each of the job's pods to its planned
node. If any step fails, every pod of the job created so far is deleted again, so a gang never
runs in part; the error is raised for the caller (the agent retries with the next cycle).
Creating what already exists (409 AlreadyExists) counts as done, so a start may be repeated
(a pod its creator died before binding is bound now), unless the pod there is still terminating
(a previous run's): that is retried later. A pod that is there and bound where an earlier
plan put it (a move another process did not carry out) is deleted and the start retried. A pod
created in a namespace whose service account is not there yet is retried at once a few times
(issue 25 item 5).

The project's namespace is created once per process (`Namespaces` remembers those known to
exist): a start is then a pod and its binding, two requests, instead of a namespace POST that
answers 409 every time. A namespace deleted outside Allot since is created again when a pod's
creation says it is not found.

`stop_job` of a job whose spec is known deletes its pods by name, and its Service and Ingress by
name only when it has them (ports; `service_type=ingress`): one request for a one-pod job
without ports, where a delete-collection by label is a consistent list on the server for each
kind. A job whose spec is not known (another process started it) is deleted by label, each kind
even when another fails, falling back to listing and deleting one by one where the server does
not allow a delete-collection (405 on older servers, or an RBAC role without
`deletecollection`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec
from agents.kubernetes import faults, manifests

ALREADY_EXISTS = 409
NOT_FOUND = 404
SETUP_RETRIES_S = (0.1, 0.2, 0.4)  # waits before the quick retries of a pod in a new namespace


def _create(call, *args, **options) -> bool:
    """Call a create method; True when it created, False when the object was there already."""
    try:
        _drain(call(*args, **options))
        return True
    except ApiException as exc:
        if exc.status == ALREADY_EXISTS:
            return False
        raise


def _drain(answer) -> None:
    """Read and release a raw answer (`_preload_content=False`), so that its connection goes
    back to the pool. The pod a create or delete answers with is not needed: the client's
    model of it (every timestamp parsed) cost a few milliseconds of the worker's CPU per
    start and stop, a share of the carry-out in `make bench-k8s` (issue 39)."""
    if hasattr(answer, "release_conn"):
        answer.read()
        answer.release_conn()


def ensure_namespace(core: client.CoreV1Api, name: str, body: dict) -> None:
    """Create the namespace unless it exists."""
    _create(core.create_namespace, body)


class Namespaces:
    """The namespaces known to exist, each created (or found there) once per process; safe
    from several threads."""

    def __init__(self) -> None:
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def ensure(self, core: client.CoreV1Api, name: str, body: dict) -> None:
        """Create the namespace unless it is known to exist."""
        if name in self._known:
            return
        ensure_namespace(core, name, body)
        with self._lock:
            self._known.add(name)

    def forget_gone(self, exc: Exception) -> bool:
        """Forget the namespace `exc` (a 404) says is not found; True when it was known, so
        that creating it again and trying once more can help."""
        if not isinstance(exc, ApiException) or exc.status != NOT_FOUND:
            return False
        try:
            details = json.loads(exc.body or "{}").get("details") or {}
        except (TypeError, ValueError):
            return False
        if details.get("kind") != "namespaces":
            return False
        with self._lock:
            known = details.get("name") in self._known
            self._known.discard(details.get("name"))
        return known


def bind(core: client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
    """Place `pod` on `node` through the binding subresource.

    The client cannot read the API's answer into a V1Binding (a known issue of the generated
    client), so the raw answer is not parsed; it is read, though, and released, so that its
    connection goes back to the pool instead of a new TLS handshake for every start."""
    answer = core.create_namespaced_pod_binding(
        pod, namespace, manifests.binding(namespace, pod, node), _preload_content=False
    )
    answer.read()
    answer.release_conn()


def create_pod(core: client.CoreV1Api, namespace: str, pod: dict,
               sleep: Callable[[float], None] = time.sleep) -> bool:  # fmt: skip
    """Create `pod`; True when it is to be bound: created now, or found unbound (the process
    that created it died before binding it). False when it exists, bound.

    A namespace still being set up is tried again after each wait of `SETUP_RETRIES_S` (under
    a second in all, so other jobs wait little), then the failure is raised for the caller's
    own back-off. A pod of the same name that is terminating raises `faults.Retry`."""
    for wait in SETUP_RETRIES_S:
        try:
            return _create_pod_once(core, namespace, pod)
        except ApiException as exc:
            if not faults.namespace_not_ready(exc):
                raise
        sleep(wait)
    return _create_pod_once(core, namespace, pod)


def _create_pod_once(core: client.CoreV1Api, namespace: str, pod: dict) -> bool:
    if _create(core.create_namespaced_pod, namespace, pod, _preload_content=False):
        return True
    return _unbound(core, namespace, pod)


PLACED = ("allot.io/node", "allot.io/devices", "allot.io/share")


class Misplaced(faults.Retry):
    """The job's pod is there, bound where an earlier plan put it: a move that the process
    which started the job did not live to carry out (issue 40). It is deleted; the start is
    tried again once it is gone, on the plan's node and devices."""


def _unbound(core: client.CoreV1Api, namespace: str, pod: dict) -> bool:
    """Whether the pod already there is to be bound; a terminating one, or an unbound one
    placed otherwise (an earlier plan's), is a reason to try again later."""
    name = pod["metadata"]["name"]
    try:
        answer = core.read_namespaced_pod(name, namespace, _preload_content=False)
    except ApiException as exc:
        if exc.status == NOT_FOUND:  # deleted since: the next attempt creates it
            raise faults.Retry(f"pod {namespace}/{name} was being deleted") from exc
        raise
    existing = json.loads(answer.data) or {}
    if (existing.get("metadata") or {}).get("deletionTimestamp"):
        raise faults.Retry(f"pod {namespace}/{name} of an earlier run is still terminating")
    theirs = (existing.get("metadata") or {}).get("annotations") or {}
    ours = pod["metadata"].get("annotations") or {}
    bound_to = (existing.get("spec") or {}).get("nodeName")
    if bound_to:
        placed = "allot.io/node" in ours  # a job's pod; a reservation pod carries no plan
        if not placed or (
            bound_to == ours["allot.io/node"]
            and all(theirs.get(key) == ours.get(key) for key in PLACED)
        ):
            return False
        delete_pod(core, namespace, name, grace_period_s=0)
        raise Misplaced(
            f"pod {namespace}/{name} runs on {bound_to} devices "
            f"{theirs.get('allot.io/devices', '?')}, the plan says {ours.get('allot.io/node')} "
            f"devices {ours.get('allot.io/devices')}: deleted, to be created there"
        )
    if any(theirs.get(key) != ours.get(key) for key in PLACED):
        delete_pod(core, namespace, name, grace_period_s=0)
        raise faults.Retry(f"pod {namespace}/{name} of an earlier plan was never bound: replaced")
    return True


def start_job(api: client.ApiClient, job: JobSpec, gpu_memory_bytes: dict[str, int] | None = None,
              image_pull_policy: str = "IfNotPresent", session_secret: str = "",
              namespaces: Namespaces | None = None,
              workspace: dict | None = None) -> list[str]:  # fmt: skip
    """Create and bind every pod of `job` (and the reservations of its shared devices); the
    names of the job's pods. All or nothing: a failure deletes the job's pods again.

    `namespaces` (the caller's, kept between starts) spares the namespace's creation when it is
    known to exist; one deleted since is created again, and the start tried once more.
    `workspace`: the claim the job's pods mount (a user's workspace), created unless it exists."""
    core = client.CoreV1Api(api)
    made = manifests.job_pods(job, gpu_memory_bytes, image_pull_policy, session_secret)
    namespaces = namespaces if namespaces is not None else Namespaces()
    try:
        return _start(core, job, made, namespaces, workspace)
    except ApiException as exc:
        if not namespaces.forget_gone(exc):
            raise
    return _start(core, job, made, namespaces, workspace)


def _start(core: client.CoreV1Api, job: JobSpec, made: list[dict], namespaces: Namespaces,
           workspace: dict | None = None) -> list[str]:  # fmt: skip
    namespace = manifests.namespace_for(job.project)
    namespaces.ensure(core, namespace, manifests.namespace(job.project))
    if workspace is not None:  # kept when the job goes: the user's files
        _create(core.create_namespaced_persistent_volume_claim, namespace, workspace)
    for node, device in manifests.shared_devices(job):
        reserve(core, node, device, namespaces)
    created: list[str] = []
    misplaced: list[Misplaced] = []  # every old pod of a gang goes in one attempt
    try:
        for pod in made:
            name = pod["metadata"]["name"]
            try:
                if create_pod(core, namespace, pod):
                    created.append(name)
                    bind(core, namespace, name, pod["metadata"]["annotations"]["allot.io/node"])
            except Misplaced as exc:
                misplaced.append(exc)
        if misplaced:
            raise misplaced[0]
    except Exception:
        for name in created:
            delete_pod(core, namespace, name, grace_period_s=0)
        raise
    return [pod["metadata"]["name"] for pod in made]


_reserving = threading.Lock()  # two jobs sharing a device, started at once, bind its pod once


def reserve(core: client.CoreV1Api, node: str, device: int,
            namespaces: Namespaces | None = None) -> None:  # fmt: skip
    """Hold one shared device on `node` with a reservation pod (bound there)."""
    namespaces = namespaces if namespaces is not None else Namespaces()
    namespaces.ensure(core, manifests.RESERVATION_NAMESPACE,
                      {"apiVersion": "v1", "kind": "Namespace",
                       "metadata": {"name": manifests.RESERVATION_NAMESPACE,
                                    "labels": manifests.MANAGED_BY}})  # fmt: skip
    pod = manifests.reservation_pod(node, device)
    with _reserving:
        if create_pod(core, manifests.RESERVATION_NAMESPACE, pod):
            bind(core, manifests.RESERVATION_NAMESPACE, pod["metadata"]["name"], node)


def delete_pod(core: client.CoreV1Api, namespace: str, name: str, grace_period_s: int) -> None:
    """Delete one pod; a pod already gone is fine."""
    try:
        _drain(
            core.delete_namespaced_pod(
                name, namespace, grace_period_seconds=grace_period_s, _preload_content=False
            )
        )
    except ApiException as exc:
        if exc.status != NOT_FOUND:
            raise


def expose(api: client.ApiClient, job: JobSpec, ingress_host: str = "",
           ingress_class: str | None = None) -> None:  # fmt: skip
    """The job's Service (when it has ports), its headless Service (when it has several pods:
    the pods' DNS names) and, for `service_type=ingress`, its Ingress."""
    namespace = manifests.namespace_for(job.project)
    for service in (manifests.service(job), manifests.rendezvous_service(job)):
        if service is not None:
            _create(client.CoreV1Api(api).create_namespaced_service, namespace, service)
    ingress = manifests.ingress(job, ingress_host, ingress_class) if ingress_host else None
    if ingress is not None:
        _create(client.NetworkingV1Api(api).create_namespaced_ingress, namespace, ingress)


def selector(project: str, name: str) -> str:
    """The label selector of one job's objects."""
    return f"allot.io/project={project},allot.io/job={name}"


def stop_job(api: client.ApiClient, project: str, name: str, grace_period_s: int = 30,
             job: JobSpec | None = None) -> None:  # fmt: skip
    """Delete every pod, Service and Ingress of the job: those `job` (its spec, when known)
    has, by name; else every one its labels find.

    Each object (each kind, by label) is deleted even when another fails; then the failure that
    decides the retry (`faults.worst`) is raised."""
    if job is not None:
        _stop_known(api, job, grace_period_s)
        return
    namespace, labels = manifests.namespace_for(project), selector(project, name)
    core, networking = client.CoreV1Api(api), client.NetworkingV1Api(api)
    kinds = [
        (core.delete_collection_namespaced_pod, core.list_namespaced_pod,
         core.delete_namespaced_pod, {"grace_period_seconds": grace_period_s}),
        (core.delete_collection_namespaced_service, core.list_namespaced_service,
         core.delete_namespaced_service, {}),
        (networking.delete_collection_namespaced_ingress, networking.list_namespaced_ingress,
         networking.delete_namespaced_ingress, {}),
    ]  # fmt: skip
    errors = []
    for collection, listing, one, options in kinds:
        try:
            delete_labelled(collection, listing, one, namespace, labels, **options)
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise faults.worst(errors)


def _stop_known(api: client.ApiClient, job: JobSpec, grace_period_s: int) -> None:
    """Delete the pods `job` has, its Service when it has ports, its headless Service when it
    has several pods, its Ingress when it is exposed through one: by name, each even when
    another fails."""
    namespace = manifests.namespace_for(job.project)
    core = client.CoreV1Api(api)
    deletes = [
        (
            core.delete_namespaced_pod,
            manifests.pod_name(job, index),
            {"grace_period_seconds": grace_period_s},
        )
        for index in range(len(job.placement))
    ]
    if job.ports:
        deletes.append((core.delete_namespaced_service, job.name, {}))
    if job.pods > 1:
        deletes.append((core.delete_namespaced_service, manifests.rendezvous_service_name(job), {}))
    if job.ports and job.service_type == "ingress":
        deletes.append((client.NetworkingV1Api(api).delete_namespaced_ingress, job.name, {}))
    errors = []
    for one, name, options in deletes:
        try:
            delete_one(one, namespace, name, **options)
        except Exception as exc:
            errors.append(exc)
    if errors:
        raise faults.worst(errors)


def delete_labelled(collection, listing, one, namespace: str, labels: str, **options) -> None:
    """Delete the namespace's objects of one kind that carry `labels`: as a collection, or one
    by one where that is not allowed (405, or 403 from a role without `deletecollection`)."""
    try:
        collection(namespace, label_selector=labels, **options)
        return
    except ApiException as exc:
        if exc.status == NOT_FOUND:  # the namespace (or the API group) is gone: so are they
            return
        if exc.status not in (403, 405):
            raise
    for item in listing(namespace, label_selector=labels).items:
        delete_one(one, namespace, item.metadata.name, **options)


def delete_one(one, namespace: str, name: str, **options) -> None:
    """Delete one object by name (its answer not decoded); one already gone is fine."""
    try:
        _drain(one(name, namespace, _preload_content=False, **options))
    except ApiException as exc:
        if exc.status != NOT_FOUND:
            raise
