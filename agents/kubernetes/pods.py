"""Starting and stopping a job's pods on the cluster, all or nothing.

`start_job` makes sure the project's namespace exists, holds every shared device with a
reservation pod (KAI's fractions), then creates and binds each of the job's pods to its planned
node. If any step fails, every pod of the job created so far is deleted again, so a gang never
runs in part; the error is raised for the caller (the agent retries with the next cycle).
Creating what already exists (409 AlreadyExists) counts as done: a start may be repeated.
"""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec
from agents.kubernetes import manifests

ALREADY_EXISTS = 409


def _create(call, *args) -> bool:
    """Call a create method; True when it created, False when the object was there already."""
    try:
        call(*args)
        return True
    except ApiException as exc:
        if exc.status == ALREADY_EXISTS:
            return False
        raise


def ensure_namespace(core: client.CoreV1Api, name: str, body: dict) -> None:
    """Create the namespace unless it exists."""
    _create(core.create_namespace, body)


def bind(core: client.CoreV1Api, namespace: str, pod: str, node: str) -> None:
    """Place `pod` on `node` through the binding subresource.

    The client cannot read the API's answer into a V1Binding (a known issue of the generated
    client), so the raw answer is not parsed."""
    core.create_namespaced_pod_binding(
        pod, namespace, manifests.binding(namespace, pod, node), _preload_content=False
    )


def start_job(api: client.ApiClient, job: JobSpec, gpu_memory_mib: dict[str, int] | None = None,
              image_pull_policy: str = "IfNotPresent",
              session_secret: str = "") -> list[str]:  # fmt: skip
    """Create and bind every pod of `job` (and the reservations of its shared devices); the
    names of the job's pods. All or nothing: a failure deletes the job's pods again."""
    core = client.CoreV1Api(api)
    namespace = manifests.namespace_for(job.project)
    ensure_namespace(core, namespace, manifests.namespace(job.project))
    for node, device in manifests.shared_devices(job):
        reserve(core, node, device)
    created: list[str] = []
    try:
        for pod in manifests.job_pods(job, gpu_memory_mib, image_pull_policy, session_secret):
            name = pod["metadata"]["name"]
            if _create(core.create_namespaced_pod, namespace, pod):
                created.append(name)
                bind(core, namespace, name, pod["metadata"]["annotations"]["allot.io/node"])
    except Exception:
        for name in created:
            delete_pod(core, namespace, name, grace_period_s=0)
        raise
    return [pod["metadata"]["name"] for pod in manifests.job_pods(job)]


def reserve(core: client.CoreV1Api, node: str, device: int) -> None:
    """Hold one shared device on `node` with a reservation pod (bound there)."""
    ensure_namespace(core, manifests.RESERVATION_NAMESPACE,
                     {"apiVersion": "v1", "kind": "Namespace",
                      "metadata": {"name": manifests.RESERVATION_NAMESPACE,
                                   "labels": manifests.MANAGED_BY}})  # fmt: skip
    pod = manifests.reservation_pod(node, device)
    if _create(core.create_namespaced_pod, manifests.RESERVATION_NAMESPACE, pod):
        bind(core, manifests.RESERVATION_NAMESPACE, pod["metadata"]["name"], node)


def delete_pod(core: client.CoreV1Api, namespace: str, name: str, grace_period_s: int) -> None:
    """Delete one pod; a pod already gone is fine."""
    try:
        core.delete_namespaced_pod(name, namespace, grace_period_seconds=grace_period_s)
    except ApiException as exc:
        if exc.status != 404:
            raise


def expose(api: client.ApiClient, job: JobSpec, ingress_host: str = "",
           ingress_class: str | None = None) -> None:  # fmt: skip
    """The job's Service (when it has ports) and, for `service_type=ingress`, its Ingress."""
    namespace = manifests.namespace_for(job.project)
    service = manifests.service(job)
    if service is not None:
        _create(client.CoreV1Api(api).create_namespaced_service, namespace, service)
    ingress = manifests.ingress(job, ingress_host, ingress_class) if ingress_host else None
    if ingress is not None:
        _create(client.NetworkingV1Api(api).create_namespaced_ingress, namespace, ingress)


def selector(project: str, name: str) -> str:
    """The label selector of one job's objects."""
    return f"allot.io/project={project},allot.io/job={name}"


def stop_job(api: client.ApiClient, project: str, name: str, grace_period_s: int = 30) -> None:
    """Delete every pod, Service and Ingress of the job (found by its labels)."""
    namespace, labels = manifests.namespace_for(project), selector(project, name)
    core = client.CoreV1Api(api)
    try:
        core.delete_collection_namespaced_pod(
            namespace, label_selector=labels, grace_period_seconds=grace_period_s
        )
        core.delete_collection_namespaced_service(namespace, label_selector=labels)
        client.NetworkingV1Api(api).delete_collection_namespaced_ingress(
            namespace, label_selector=labels
        )
    except ApiException as exc:
        if exc.status != 404:  # the namespace is gone: so is everything in it
            raise
