"""What the cluster has: nodes with `nvidia.com/gpu` allocatable, read with the official client.

GPU model and memory come from NVIDIA GPU feature discovery's labels (`nvidia.com/gpu.product`,
`nvidia.com/gpu.memory` in MiB, kept in bytes as every memory amount, issue 33), the pool from a
configurable label (default `allot.io/pool`),
readiness from the Ready condition and the cordon from `spec.unschedulable`. Nodes without GPUs
are not Allot's concern and are left out.

Issue 26: allocatable `cpu` and `memory` are what Allot may place pods' requests on. A GPU the
device plugin finds unhealthy stays in the node's capacity but leaves its allocatable
`nvidia.com/gpu`, so capacity minus allocatable devices are failed; Kubernetes does not say
which, so Allot takes them from the top of its own numbering (the highest indexes). A node
condition about its GPUs that is True (node-problem-detector's or the GPU operator's, e.g.
`GpuUnhealthy`, `XidCriticalError`: any condition type naming a GPU or XID errors) fails every
device of the node.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

from kubernetes import client
from kubernetes.utils import parse_quantity

from agents.base import NodeStatus
from agents.kubernetes.telemetry import CountingApiClient, Tally

GPU = "nvidia.com/gpu"
PRODUCT_LABEL = "nvidia.com/gpu.product"
MEMORY_LABEL = "nvidia.com/gpu.memory"


@dataclass(frozen=True)
class KubernetesConfig:
    """Where the cluster is and how Allot reads it (the portal fills it from ALLOT_K8S_*)."""

    host: str | None = None  # None: in-cluster service account, else KUBECONFIG / context
    context: str | None = None
    # With `host`: who Allot is (a bearer token, or one re-read from a file when it changes, as
    # a projected service-account token rotates; or a client certificate) and the CA it trusts.
    token: str = ""
    token_file: str = ""
    ca_file: str = ""
    client_cert_file: str = ""
    client_key_file: str = ""
    pool_label: str = "allot.io/pool"
    default_pool: str = "default"
    verify_ssl: bool = True
    grace_period_s: int = 30  # how long a stopped or evicted job's containers get to exit
    image_pull_policy: str = "IfNotPresent"
    ingress_host: str = ""  # where `service_type=ingress` jobs answer (Run:AI's cluster URL)
    ingress_class: str | None = None
    ingress_scheme: str = "https"
    nodeport_host: str = ""  # the host of NodePort URLs ("": the address of the pod's node)
    dcgm_url: str = ""  # the DCGM exporter's /metrics ("" : utilization unknown)
    watch_timeout_s: int = 30  # the server ends each watch after this; it resumes at once
    node_refresh_s: float = 10.0  # how often the node list is read again
    max_backoff_s: float = 60.0  # the longest wait between attempts while the API is down
    session_secret: str = ""  # derives Jupyter tokens the portal's session proxy sends
    workspace_size: str = "10Gi"  # each user's workspace claim per project (issue 23)...
    workspace_storage_class: str | None = None  # ...of this class (None: the cluster's default)
    orphan_grace_s: float = 60.0  # a Service or Ingress no job claims this long is deleted
    sweep_interval_s: float = 15.0  # how often Services and Ingresses are listed for that
    vanished_after_s: float = 30.0  # a started job missing pods this long was deleted outside
    namespace_setup_s: float = 60.0  # how long a new namespace may lack its service account
    concurrency: int = 16  # how many jobs are started (stopped) at once, each on a connection


def api_client(config: KubernetesConfig, tally: Tally | None = None) -> client.ApiClient:
    """An ApiClient for `config.host` (with its credentials), the in-cluster account, or the
    kubeconfig context; with `tally`, one that counts its failed calls there."""
    if config.host:
        configuration = host_configuration(config)
    else:
        from kubernetes import config as kube_config

        try:
            kube_config.load_incluster_config()
        except kube_config.ConfigException:
            kube_config.load_kube_config(context=config.context)
        configuration = client.Configuration.get_default_copy()
    # One pooled connection for each job carried out at once (the watch has its own).
    configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize,
                                                config.concurrency + 2)  # fmt: skip
    return (
        client.ApiClient(configuration)
        if tally is None
        else CountingApiClient(configuration, tally)
    )


def host_configuration(config: KubernetesConfig) -> client.Configuration:
    """The client configuration for `config.host`: TLS and credentials (issue 25 item 4)."""
    configuration = client.Configuration()
    configuration.host = config.host
    configuration.verify_ssl = config.verify_ssl
    configuration.ssl_ca_cert = config.ca_file or None
    configuration.cert_file = config.client_cert_file or None
    configuration.key_file = config.client_key_file or None
    if config.token:
        configuration.api_key["authorization"] = f"Bearer {config.token}"
    if config.token_file:
        configuration.refresh_api_key_hook = TokenFile(config.token_file)
        configuration.refresh_api_key_hook(configuration)  # consulted once a token is set
    return configuration


class TokenFile:
    """Reads a bearer token from a file again whenever the file changes (a projected
    service-account token is rewritten by the kubelet before it expires)."""

    def __init__(self, path: str):
        self.path = Path(path)
        self._seen: tuple[int, int] | None = None

    def __call__(self, configuration: client.Configuration) -> None:
        try:
            stat = self.path.stat()
        except OSError:
            return  # keep the last token: the file may be being replaced
        if (stat.st_mtime_ns, stat.st_size) != self._seen:
            token = self.path.read_text().strip()
            if token:
                configuration.api_key["authorization"] = f"Bearer {token}"
                self._seen = (stat.st_mtime_ns, stat.st_size)


def node_status(node: dict, config: KubernetesConfig) -> NodeStatus | None:
    """One node as Allot sees it, or None when it has no GPUs. `node` is the API's JSON: the
    client's models of the lab's 64 nodes (every timestamp parsed) cost the observe stage
    0.1-0.2 s of CPU each `node_refresh_s`, their JSON 0.005 s (issue 39)."""
    status, metadata = node.get("status") or {}, node.get("metadata") or {}
    allocatable, capacity = status.get("allocatable") or {}, status.get("capacity") or {}
    healthy = _count(allocatable.get(GPU))
    gpus = max(_count(capacity.get(GPU)), healthy)
    if gpus <= 0:
        return None
    labels = metadata.get("labels") or {}
    conditions = status.get("conditions") or []
    ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
    memory = labels.get(MEMORY_LABEL, "")
    gpu_trouble = any(c.get("status") == "True" and GPU_CONDITION.search(c.get("type") or "")
                      for c in conditions)  # fmt: skip
    return NodeStatus(
        name=metadata["name"],
        ready=ready,
        gpus=gpus,
        gpu_product=labels.get(PRODUCT_LABEL, ""),
        gpu_memory_bytes=int(memory) * 2**20 if memory.isdigit() else None,  # MiB
        pool=labels.get(config.pool_label, config.default_pool),
        schedulable=not (node.get("spec") or {}).get("unschedulable"),
        cpu_millis=_amount(allocatable.get("cpu"), 1000),
        memory_bytes=_amount(allocatable.get("memory"), 1),
        failed_devices=tuple(range(0 if gpu_trouble else healthy, gpus)),
        labels=tuple(sorted(labels.items())),
    )


GPU_CONDITION = re.compile(r"gpu|xid", re.IGNORECASE)


def _count(quantity: str | None) -> int:
    """A device count from the API ("8"); 0 when absent or unreadable."""
    return int(_amount(quantity, 1) or 0)


def _amount(quantity: str | None, scale: float) -> int | None:
    """An allocatable quantity times `scale`, rounded down (a node never offers more than it
    has); None when absent or unreadable."""
    if not quantity:
        return None
    try:
        return max(int(parse_quantity(quantity) * Decimal(str(scale))), 0)
    except (ValueError, ArithmeticError):
        return None


def inventory(api: client.ApiClient, config: KubernetesConfig) -> list[NodeStatus]:
    """Every GPU node of the cluster, by name."""
    answer = client.CoreV1Api(api).list_node(_request_timeout=10, _preload_content=False)
    nodes = json.loads(answer.data).get("items") or ()
    found = [node_status(node, config) for node in nodes]
    return sorted((n for n in found if n is not None), key=lambda n: n.name)
