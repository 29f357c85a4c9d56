"""The Kubernetes objects that carry out Allot's plan, as plain dicts (pure functions).

Allot is the scheduler: every pod names `schedulerName: allot` and is bound to the planned node
through the `pods/binding` subresource (`binding`), as KAI and other secondary schedulers do.

- Whole GPUs: the pod requests `nvidia.com/gpu: n` on its node.
- Fractions follow KAI's approach: one reservation pod per shared device (`reservation_pod`)
  holds `nvidia.com/gpu: 1` on the node, and the fractional pods request no GPU but get that
  device in `NVIDIA_VISIBLE_DEVICES` plus `ALLOT_GPU_FRACTION` and `ALLOT_GPU_MEMORY_MIB`. As in
  KAI, the memory limit is cooperative: the GPU does not enforce it.
- A job's ports get a Service, of type NodePort or LoadBalancer when `service_type` says so;
  `service_type=ingress` adds a `networking.k8s.io/v1` Ingress whose path is
  `/{project}-{name}-{port}`, Run:AI's convention.
- A job of several pods rendezvouses (issue 33): a headless Service (`rendezvous_service`) gives
  each pod a stable DNS name (`hostname` = the pod's name, `subdomain` = the Service), and each
  pod gets the variables torchrun, torch.distributed and Kubeflow Trainer v2 read
  (`rendezvous.environment`): pod 0's name as `MASTER_ADDR`, its rank, the world's size, and an
  MPI-style host list. A single-pod job's pod is as before.

Each project's work lives in the namespace `allot-<project>`. Labels carry project, job, user
and type, so the agent finds a job's objects by label selector.
"""

from __future__ import annotations

import re
import shlex

from agents import rendezvous
from agents.base import JobSpec, PodSpec
from agents.kubernetes import sessions
from agents.kubernetes.names import namespace_for

SCHEDULER_NAME = "allot"
MANAGED_BY = {"app.kubernetes.io/managed-by": "allot"}
GPU = "nvidia.com/gpu"
RESERVATION_NAMESPACE = "allot-system"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
DEFAULT_IMAGE = "python:3.11-slim"
# A researcher's pod talks to nothing of the cluster's: no service-account token mounted (the
# namespace's default account could otherwise read what RBAC grants it), and no environment
# variables naming the namespace's other Services. The only value Allot adds to a pod's
# environment besides the job's own is a Launch Jupyter pod's token, an HMAC of that one job
# (`sessions.session_token`), never a secret of the portal.
UNPRIVILEGED = {"automountServiceAccountToken": False, "enableServiceLinks": False}
# How `service_type` exposes a job's ports outside the cluster (ingress: an Ingress in front of
# a ClusterIP Service; portforward and none: a ClusterIP Service only).
SERVICE_TYPES = {"nodeport": "NodePort", "loadbalancer": "LoadBalancer"}


def label_value(text: str) -> str:
    """`text` as a valid label value (63 characters of [A-Za-z0-9._-], alphanumeric ends)."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "-", text)[:63]
    return cleaned.strip("-._")


def job_labels(job: JobSpec) -> dict[str, str]:
    """The labels that find a job's pods, services and ingresses."""
    labels = {**MANAGED_BY, "allot.io/project": job.project, "allot.io/job": job.name,
              "allot.io/type": job.type}  # fmt: skip
    if job.user and label_value(job.user):
        labels["allot.io/user"] = label_value(job.user)
    return labels


def namespace(project: str) -> dict:
    """The project's namespace."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": namespace_for(project),
                     "labels": {**MANAGED_BY, "allot.io/project": project}},
    }  # fmt: skip


def pod_name(job: JobSpec, index: int) -> str:
    """The name of pod `index` of the job."""
    return f"{job.name}-{index}"


def job_pods(job: JobSpec, gpu_memory_bytes: dict[str, int] | None = None,
             image_pull_policy: str = "IfNotPresent",
             session_secret: str = "") -> list[dict]:  # fmt: skip
    """One pod per placed pod of the job, each for its node (bound there after creation).

    With `session_secret`, a Launch Jupyter job's notebook server is set up to answer the
    portal's session proxy (`sessions.notebook_container`)."""
    pods = [
        _pod(job, index, pod, (gpu_memory_bytes or {}).get(pod.node), image_pull_policy)
        for index, pod in enumerate(job.placement)
    ]
    if session_secret and sessions.is_session(job):
        extra = sessions.notebook_container(job, session_secret)
        for pod in pods:
            container = pod["spec"]["containers"][0]
            container["args"] = extra["args"]
            container["env"] = container["env"] + extra["env"]
            if job.user:  # the user's workspace in the project at the notebook's home
                sessions.mount_workspace(pod, job)
    return pods


def _pod(job: JobSpec, index: int, pod: PodSpec, memory_bytes: int | None, pull: str) -> dict:
    """Pod `index` of `job` on its node: one container, its GPUs, its volumes."""
    volumes, mounts = _volumes(job)
    container = _container(job, pull) | _gpus(pod, memory_bytes)
    resources = container_resources(job, container.pop("resources", {}).get("limits", {}))
    if resources:
        container["resources"] = resources
    container["env"] = [*_env(job), *container.get("env", []), *_rendezvous_env(job, index)]
    if mounts:
        container["volumeMounts"] = mounts
    spec = {
        "schedulerName": SCHEDULER_NAME,
        "restartPolicy": "Never" if job.type == "train" else "Always",
        "containers": [container],
        **UNPRIVILEGED,
    }
    if volumes:
        spec["volumes"] = volumes
    if job.pods > 1:  # <pod>.<service>.<namespace>.svc resolves to this pod (the headless Service)
        spec["hostname"] = pod_name(job, index)
        spec["subdomain"] = rendezvous_service_name(job)
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(job, index),
            "namespace": namespace_for(job.project),
            "labels": {**job_labels(job), "allot.io/pod-index": str(index)},
            "annotations": {
                "allot.io/node": pod.node,
                "allot.io/devices": ",".join(map(str, pod.devices)),
                "allot.io/share": f"{pod.share:g}",
                "allot.io/pods": str(len(job.placement)),  # the gang: all or none (R6.1)
            },
        },
        "spec": spec,
    }


def _container(job: JobSpec, pull: str) -> dict:
    """The job's container as submitted: image, command, arguments, ports."""
    container = {"name": "main", "image": job.image or DEFAULT_IMAGE, "imagePullPolicy": pull}
    if job.command:
        container["command"] = shlex.split(job.command)
    if job.args:
        container["args"] = list(job.args)
    if job.ports:
        container["ports"] = [{"containerPort": port} for port in job.ports]
    return container


def _env(job: JobSpec) -> list[dict]:
    """The job's own variables, but those the rendezvous sets for a job of several pods."""
    ours = rendezvous.NAMES if job.pods > 1 else frozenset()
    return [{"name": key, "value": value} for key, value in job.environment if key not in ours]


def pod_address(job: JobSpec, index: int) -> str:
    """Pod `index`'s DNS name through the job's headless Service (a job of several pods)."""
    service = rendezvous_service_name(job)
    return f"{pod_name(job, index)}.{service}.{namespace_for(job.project)}.svc"


def _rendezvous_env(job: JobSpec, index: int) -> list[dict]:
    """The rendezvous variables of pod `index` of a job of several pods (none for one pod)."""
    if job.pods <= 1:
        return []
    hosts = [pod_address(job, i) for i in range(job.pods)]
    pod = job.placement[index]
    slots = len(pod.devices) if pod.share >= 1 and pod.devices else 1
    variables = rendezvous.environment(job, index, hosts, slots)
    return [{"name": key, "value": value} for key, value in variables.items()]


def _gpus(pod: PodSpec, memory_bytes: int | None) -> dict:
    """Whole devices as the device plugin's resource; a fraction of one device (the
    reservation pod holds it, as in KAI) as the variables that name it and its share."""
    if pod.share < 1:
        devices = ",".join(str(device) for device in pod.devices)
        env = [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": devices},
            {"name": "ALLOT_GPU_FRACTION", "value": f"{pod.share:g}"},
        ]
        if memory_bytes:
            mib = int(memory_bytes * pod.share) // 2**20  # the variable has always been in MiB
            env.append({"name": "ALLOT_GPU_MEMORY_MIB", "value": str(mib)})
        return {"env": env}
    if pod.devices:
        return {"resources": {"limits": {GPU: len(pod.devices)}}}
    return {}


def container_resources(job: JobSpec, gpu_limits: dict) -> dict:
    """The container's `resources`: the job's CPU and memory requests and limits per pod
    (issue 26; millicores and bytes, which Kubernetes reads exactly: "500m", "50000000") and
    the device plugin's GPUs. A limit left out is none (a memory limit is the point past which
    the pod is killed, so Allot sets one only when asked, as Run:AI)."""
    requests, limits = {}, dict(gpu_limits)
    if job.cpu_millis:
        requests["cpu"] = f"{job.cpu_millis}m"
    if job.memory_bytes:
        requests["memory"] = str(job.memory_bytes)
    if job.cpu_limit_millis is not None:
        limits["cpu"] = f"{job.cpu_limit_millis}m"
    if job.memory_limit_bytes is not None:
        limits["memory"] = str(job.memory_limit_bytes)
    return {key: value for key, value in (("requests", requests), ("limits", limits)) if value}


def _volumes(job: JobSpec) -> tuple[list[dict], list[dict]]:
    """The job's claims as pod volumes and their mounts in the container."""
    volumes, mounts = [], []
    for i, (claim, path, read_only) in enumerate(job.volumes):
        claim_source = {"claimName": claim, "readOnly": read_only}
        volumes.append({"name": f"pvc-{i}", "persistentVolumeClaim": claim_source})
        mounts.append({"name": f"pvc-{i}", "mountPath": path, "readOnly": read_only})
    return volumes, mounts


def reservation_pod(node: str, device: int) -> dict:
    """The pod that holds one shared device on `node` while fractional pods use it (KAI)."""
    name = label_value(f"allot-reservation-{node}-{device}".lower()).replace(".", "-")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": RESERVATION_NAMESPACE,
            "labels": {
                **MANAGED_BY,
                "allot.io/reservation": "true",
                "allot.io/node": label_value(node),
                "allot.io/device": str(device),
            },
        },
        "spec": {
            "schedulerName": SCHEDULER_NAME,
            **UNPRIVILEGED,
            "containers": [
                {"name": "reserve", "image": PAUSE_IMAGE, "resources": {"limits": {GPU: 1}}}
            ],
        },
    }


def binding(namespace_name: str, pod: str, node: str) -> dict:
    """The `pods/binding` body that places `pod` on `node`."""
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": pod, "namespace": namespace_name},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }


def service(job: JobSpec) -> dict | None:
    """A Service for the job's ports (None without ports): NodePort or LoadBalancer as the
    job's `service_type` asks (Run:AI's --service-type), else ClusterIP."""
    if not job.ports:
        return None
    spec: dict = {
        "selector": {"allot.io/project": job.project, "allot.io/job": job.name},
        "ports": [{"name": f"port-{port}", "port": port, "targetPort": port} for port in job.ports],
    }
    if job.service_type in SERVICE_TYPES:
        spec["type"] = SERVICE_TYPES[job.service_type]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": job.name,
            "namespace": namespace_for(job.project),
            "labels": job_labels(job),
        },
        "spec": spec,
    }


def rendezvous_service_name(job: JobSpec) -> str:
    """The name of a job's headless Service: the job's, which must be a DNS-1035 label (a
    letter first: a job named `3d-unet` gets `job-3d-unet`). A job that also has ports keeps
    its name for their Service (`service`), so its headless one is `<name>-hosts`."""
    name = job.name if job.name[:1].isalpha() else f"job-{job.name}"
    return f"{name}-hosts" if job.ports else name


def rendezvous_service(job: JobSpec) -> dict | None:
    """The headless Service of a job of several pods (None for one pod): no cluster address,
    the job's pods as endpoints whether or not they are ready (a rank looks its peers up
    before they answer, as Kubeflow's JobSet does), so `<pod>.<service>.<namespace>.svc`
    names each pod."""
    if job.pods <= 1:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": rendezvous_service_name(job),
            "namespace": namespace_for(job.project),
            "labels": {**job_labels(job), "allot.io/rendezvous": "true"},
        },
        "spec": {
            "clusterIP": "None",
            "selector": {"allot.io/project": job.project, "allot.io/job": job.name},
            "publishNotReadyAddresses": True,
        },
    }


def ingress_path(job: JobSpec, port: int) -> str:
    """Run:AI's ingress path of one port of a job."""
    return f"/{job.project}-{job.name}-{port}"


def ingress(job: JobSpec, host: str, class_name: str | None = None) -> dict | None:
    """An Ingress for `service_type=ingress` jobs: one path per port (None otherwise)."""
    if job.service_type != "ingress" or not job.ports:
        return None
    paths = [
        {"path": ingress_path(job, port), "pathType": "Prefix",
         "backend": {"service": {"name": job.name, "port": {"number": port}}}}
        for port in job.ports
    ]  # fmt: skip
    spec = {"rules": [{"host": host, "http": {"paths": paths}}]}
    if class_name:
        spec["ingressClassName"] = class_name
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": job.name,
            "namespace": namespace_for(job.project),
            "labels": job_labels(job),
        },
        "spec": spec,
    }


def ingress_urls(job: JobSpec, host: str, scheme: str = "https") -> list[dict]:
    """Where an ingress job's ports answer: `[{"port", "url"}]`."""
    if job.service_type != "ingress":
        return []
    return [{"port": port, "url": f"{scheme}://{host}{ingress_path(job, port)}"}
            for port in job.ports]  # fmt: skip


def shared_devices(job: JobSpec) -> list[tuple[str, int]]:
    """(node, device) of every device the job shares with others: each needs a reservation."""
    return sorted({(pod.node, device) for pod in job.placement if pod.share < 1
                   for device in pod.devices})  # fmt: skip
