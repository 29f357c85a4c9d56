"""Where a job's ports answer from outside the cluster (issue 25 item 3).

- NodePort: `http://<node>:<nodePort>`, where the node is `nodeport_host` when one is set (a
  name in front of the nodes), else the address of the node the job's first pod runs on (its
  ExternalIP, else its InternalIP, else its Hostname): every node forwards a NodePort, and the
  pod's own node does so under `externalTrafficPolicy: Local` too.
- LoadBalancer: `http://<address>:<port>` once the load balancer has one; while it is pending,
  nothing (the caller shows the in-cluster address).

Read from the API on each call: the web process, which asks this, runs no watch.
"""

from __future__ import annotations

from kubernetes import client

from agents.base import JobSpec
from agents.kubernetes import manifests, pods

ADDRESS_ORDER = ("ExternalIP", "InternalIP", "Hostname")
TIMEOUT_S = 5


def service_urls(api: client.ApiClient, job: JobSpec, nodeport_host: str = "") -> list[dict]:
    """The job's URLs through its NodePort or LoadBalancer Service; [] while unknown."""
    core = client.CoreV1Api(api)
    namespace = manifests.namespace_for(job.project)
    service = core.read_namespaced_service(job.name, namespace, _request_timeout=TIMEOUT_S)
    ports = service.spec.ports or []
    if service.spec.type == "LoadBalancer":
        host = _balancer(service)
        return [{"port": p.port, "url": f"http://{host}:{p.port}"} for p in ports] if host else []
    if service.spec.type != "NodePort":
        return []
    host = nodeport_host or _node_address(core, job)
    if not host:
        return []
    return [{"port": p.port, "url": f"http://{_bracketed(host)}:{p.node_port}"}
            for p in ports if p.node_port]  # fmt: skip


def _balancer(service: client.V1Service) -> str:
    balancer = service.status.load_balancer if service.status else None
    for ingress in (balancer.ingress if balancer else None) or []:
        if ingress.ip or ingress.hostname:
            return _bracketed(ingress.ip or ingress.hostname)
    return ""


def _node_address(core: client.CoreV1Api, job: JobSpec) -> str:
    """The address of the node the job's first pod was bound to ("" before it is)."""
    found = core.list_namespaced_pod(
        manifests.namespace_for(job.project),
        label_selector=pods.selector(job.project, job.name),
        _request_timeout=TIMEOUT_S,
    ).items
    found.sort(key=lambda pod: int((pod.metadata.labels or {}).get("allot.io/pod-index", 0)))
    nodes = [pod.spec.node_name for pod in found if pod.spec and pod.spec.node_name]
    if not nodes:
        return ""
    node = core.read_node(nodes[0], _request_timeout=TIMEOUT_S)
    addresses = {a.type: a.address for a in (node.status.addresses or [])} if node.status else {}
    return next((addresses[kind] for kind in ADDRESS_ORDER if addresses.get(kind)), "")


def _bracketed(host: str) -> str:
    """An IPv6 address in brackets, as a URL needs it."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
