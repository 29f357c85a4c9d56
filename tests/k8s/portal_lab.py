"""The portal on the Kubernetes lab: the fixtures of the integration tier (issue 25).

`allot_lab` is a lab of its own (not `k8s_lab`, whose two `kwok-gpu-*` nodes other tests count):
the two DGX-1 nodes of TR-4858, `dgx1-1` and `dgx1-2`, 8 x Tesla V100 32 GB each, made with the
lab script's own node manifest. One lab serves every module that imports the fixture (counted
as `tests.k8s.lab` counts its users), and is removed after the last.

`portal_on_lab` makes the portal process run `ALLOT_AGENT=kubernetes` against it: KUBECONFIG
names the lab's admin kubeconfig, the process's agent is rebuilt from the settings
(`portal.scheduling.agent.get_agent`), and after the test every object the agent made is
deleted (the projects' namespaces, the reservation pods) so the next test starts empty.

The helpers read the cluster the way a person with kubectl would: the job pods as
`(project, pod) -> node`, whether they run, the reservation pods.
"""

from __future__ import annotations

import argparse
import http.client
import importlib.machinery
import importlib.util
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException
from kubernetes.config import kube_config

from tests.k8s.lab import SCRIPT, Lab, SharedLab, start_lab
from tests.k8s.lab import eventually as lab_eventually

NODES = ("dgx1-1", "dgx1-2")  # TR-4858's nodes (tests/fixtures/tr4858.json)
GPUS_PER_NODE = 8
GPU_PRODUCT = "Tesla-V100-SXM2-32GB"
GPU_MEMORY_MIB = 32768
INGRESS_HOST = "gpu.example.org"
MANAGED = "app.kubernetes.io/managed-by=allot"
RESERVATIONS = "allot-system"


def lab_script() -> ModuleType:
    """scripts/k8s-lab as a module (its node manifest)."""
    name = "allot_k8s_lab_script"
    if name not in sys.modules:
        loader = importlib.machinery.SourceFileLoader(name, str(SCRIPT))
        module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
        sys.modules[name] = module  # dataclasses look their module up while it loads
        loader.exec_module(module)
    return sys.modules[name]


def eventually(check: Callable[[], object], what: str, timeout: float = 30) -> object:
    """`tests.k8s.lab.eventually`, polling faster and giving up sooner (these tests' waits are
    short)."""
    return lab_eventually(check, what, timeout=timeout, every=0.1)


def add_nodes(core: client.CoreV1Api, names: tuple[str, ...], **options) -> None:
    """Create fake GPU nodes with the lab's manifest (`options`: its `start` options) and wait
    until KWOK has made them Ready."""
    args = argparse.Namespace(
        gpus_per_node=GPUS_PER_NODE, gpu_product=GPU_PRODUCT, gpu_memory_mib=GPU_MEMORY_MIB,
        gpu_family="volta", cpus_per_node=64, memory_per_node="512Gi", label=[],
    )  # fmt: skip
    for key, value in options.items():
        setattr(args, key, value)
    for name in names:
        core.create_node(lab_script().node_manifest(name, args))

    def ready() -> bool:
        nodes = {n.metadata.name: n for n in core.list_node().items}
        return all(
            name in nodes
            and any(
                c.type == "Ready" and c.status == "True"
                for c in nodes[name].status.conditions or []
            )
            for name in names
        )

    eventually(ready, f"nodes {', '.join(names)} Ready", timeout=60)


def _start() -> Lab:
    workdir, state = start_lab("allot-k8s-portal-lab-", "--nodes", "0", "--jobset")
    api = config.new_client_from_config(config_file=state["kubeconfig"])
    add_nodes(client.CoreV1Api(api), NODES)
    return Lab(dir=workdir, kubeconfig=Path(state["kubeconfig"]), server=state["server"],
               nodes=list(NODES), gpus_per_node=GPUS_PER_NODE, api_client=api)  # fmt: skip


_SHARED = SharedLab(_start)


@pytest.fixture(scope="session", name="allot_lab")
def fixture_allot_lab() -> Iterator[Lab]:
    """The lab with TR-4858's two nodes, shared by every module that imports this fixture."""
    yield from _SHARED.use()


@pytest.fixture(name="portal_on_lab")
def fixture_portal_on_lab(allot_lab: Lab, settings, monkeypatch) -> Iterator[object]:
    """The process's agent is the Kubernetes agent on the lab (ALLOT_AGENT=kubernetes and
    KUBECONFIG, as a deployment outside the cluster sets them); yields that agent."""
    from portal.scheduling import agent as agent_module

    monkeypatch.setenv("KUBECONFIG", str(allot_lab.kubeconfig))
    # The client reads KUBECONFIG once, when it is imported (before this test set it).
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(allot_lab.kubeconfig))
    settings.ALLOT_AGENT = "kubernetes"
    settings.ALLOT_K8S_INGRESS_HOST = INGRESS_HOST
    settings.ALLOT_K8S_GRACE_PERIOD_S = 0  # KWOK ends a deleted pod at once anyway
    monkeypatch.setattr(agent_module, "_agent", None)
    agent = agent_module.get_agent()
    assert type(agent).__name__ == "KubernetesAgent"
    try:
        yield agent
    finally:
        for made in {id(agent): agent, id(agent_module._agent): agent_module._agent}.values():
            if made is not None:  # the test may have put another process's agent in place
                made.close()
        agent_module._agent = None
        clean(allot_lab.core)


def clean(core: client.CoreV1Api) -> None:
    """Delete every pod the agent made and wait until they are gone; delete the namespaces it
    made (their Services, Ingresses and quotas with them) without waiting: the namespace
    controller takes seconds, and no two tests use the same project."""
    namespaces = [n.metadata.name for n in core.list_namespace(label_selector=MANAGED).items]
    for name in [*namespaces, RESERVATIONS]:
        try:
            core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        except ApiException as exc:
            if exc.status != 404:
                raise
    for name in namespaces:
        if name == RESERVATIONS:
            continue
        try:
            core.delete_namespace(name)
        except ApiException as exc:
            if exc.status not in (404, 409):
                raise

    def gone() -> bool:
        return not core.list_pod_for_all_namespaces(label_selector=MANAGED).items

    eventually(gone, "the agent's pods to be deleted", timeout=60)


# --- What the cluster holds ---------------------------------------------------------------------


def job_pods(core: client.CoreV1Api) -> dict[tuple[str, str], str | None]:
    """(project, pod) -> node of every job pod Allot made (reservation pods left out), deleted
    ones (terminating) included."""
    found = core.list_pod_for_all_namespaces(label_selector=MANAGED).items
    return {(pod.metadata.labels["allot.io/project"], pod.metadata.name): pod.spec.node_name
            for pod in found if "allot.io/job" in (pod.metadata.labels or {})}  # fmt: skip


def running_pods(core: client.CoreV1Api) -> dict[tuple[str, str], str]:
    """(project, pod) -> node of every job pod that is Running, ready and not being deleted."""
    found = core.list_pod_for_all_namespaces(label_selector=MANAGED).items
    return {(pod.metadata.labels["allot.io/project"], pod.metadata.name): pod.spec.node_name
            for pod in found if "allot.io/job" in (pod.metadata.labels or {})
            and _running(pod)}  # fmt: skip


def reservations(core: client.CoreV1Api) -> dict[tuple[str, str], bool]:
    """(node, device) -> Running of every reservation pod."""
    found = core.list_namespaced_pod(RESERVATIONS, label_selector="allot.io/reservation=true").items
    return {(pod.spec.node_name, pod.metadata.labels["allot.io/device"]): _running(pod)
            for pod in found}  # fmt: skip


def _running(pod: client.V1Pod) -> bool:
    statuses = pod.status.container_statuses or []
    return (
        pod.status.phase == "Running"
        and pod.metadata.deletion_timestamp is None
        and bool(statuses)
        and all(s.ready for s in statuses)
    )


def planned_pods(rows) -> dict[tuple[str, str], str]:
    """(project, pod) -> node of every pod of the jobs `rows` (REST job dicts) holds."""
    return {(job["project"], f"{job['name']}-{index}"): pod["node"]
            for job in rows if job["status"] in ("ContainerCreating", "Running")
            for index, pod in enumerate(job["placement"])}  # fmt: skip


def shared_devices(rows) -> set[tuple[str, str]]:
    """(node, device) of every device the holding jobs of `rows` share."""
    return {(pod["node"], str(device)) for job in rows
            if job["status"] in ("ContainerCreating", "Running")
            for pod in job["placement"] if pod.get("share", 1) < 1
            for device in pod.get("devices", ())}  # fmt: skip


# --- The portal through its REST API ------------------------------------------------------------


class Rest:
    """What a REST client of the portal does, through DRF's test client in this process (the
    views run the cycle with the process's agent, the Kubernetes one under `portal_on_lab`)."""

    def __init__(self, api_client):
        self.client = api_client

    def call(self, method: str, path: str, body: dict | None = None, ok=(200, 201, 204)):
        answer = getattr(self.client, method)(f"/api/v1/{path}", body, format="json")
        assert answer.status_code in ok, (method, path, answer.status_code, answer.content[:500])
        return answer.json() if answer.content else None

    def project(self, name: str, quota: float, **fields) -> None:
        self.call("post", "projects/", {"name": name, "quota": quota, **fields})

    def submit(self, project: str, name: str, gpus: float, **fields) -> dict:
        return self.call("post", "jobs/", {"project": project, "name": name, "gpus": gpus,
                                           **fields})  # fmt: skip

    def delete(self, project: str, name: str) -> None:
        self.call("delete", f"jobs/{project}/{name}/")

    def settle(self) -> dict:
        answer = self.call("post", "scheduler/cycles/", {})
        assert answer["settled"], answer
        return answer

    def job(self, project: str, name: str) -> dict:
        return self.call("get", f"jobs/{project}/{name}/")

    def jobs(self) -> list[dict]:
        return self.call("get", "jobs/?page_size=1000")["results"]

    def events(self, project: str, name: str) -> list[dict]:
        answer = self.call("get", f"jobs/{project}/{name}/events/")
        return answer["results"] if isinstance(answer, dict) else answer

    def status_becomes(self, project: str, name: str, *statuses: str, timeout: float = 90) -> dict:
        """Run cycles until the job's status is one of `statuses`; the job. The wait is long
        enough for a loaded two-core machine (a move is a delete, KWOK's termination and a new
        bind: 30 s did not always do in CI); it costs nothing when the job gets there sooner."""

        def reached() -> dict | None:
            self.settle()
            job = self.job(project, name)
            return job if job["status"] in statuses else None

        return eventually(reached, f"{project}/{name} to be {' or '.join(statuses)}", timeout)

    def all_running(self, timeout: float = 90) -> list[dict]:
        """Run cycles until every job that holds GPUs is Running; those jobs."""

        def reached() -> list[dict] | None:
            self.settle()
            holding = [j for j in self.jobs() if j["status"] in ("ContainerCreating", "Running")]
            return holding if all(j["status"] == "Running" for j in holding) else None

        return eventually(reached, "every placed job to be Running", timeout)


def cluster_matches(core: client.CoreV1Api, rows: list[dict], timeout: float = 30) -> dict:
    """Wait until the cluster holds exactly the job pods `rows` plan, each Running on its planned
    node (reservation pods aside); fail with the difference. The planned pods."""
    want = planned_pods(rows)
    deadline = time.monotonic() + timeout
    while True:
        present, running = job_pods(core), running_pods(core)
        if present == want and running == want:
            return want
        if time.monotonic() > deadline:
            missing = sorted(set(want.items()) - set(running.items()))
            extra = sorted(set(present.items()) - set(want.items()))
            pytest.fail(
                "the cluster's pods are not the planned ones:\n"
                f"  planned, not Running there: {missing}\n  on the cluster, not planned: {extra}"
            )
        time.sleep(0.1)


# --- etcd under the lab: a real compaction ------------------------------------------------------


def etcd_call(lab: Lab, path: str, body: dict) -> dict:
    """One call of etcd's JSON gateway (`/v3/...`) with the API server's client certificate."""
    state = json.loads((lab.dir / "state.json").read_text())
    pki = lab.dir / "pki"
    context = ssl.create_default_context(cafile=str(pki / "ca.crt"))
    context.load_cert_chain(
        str(pki / "apiserver-etcd-client.crt"), str(pki / "apiserver-etcd-client.key")
    )
    connection = http.client.HTTPSConnection(
        "127.0.0.1", state["ports"]["etcd"], context=context, timeout=10
    )
    try:
        connection.request("POST", path, body=json.dumps(body),
                           headers={"Content-Type": "application/json"})  # fmt: skip
        response = connection.getresponse()
        answer = json.loads(response.read())
        assert response.status == 200, answer
        return answer
    finally:
        connection.close()


def compact_etcd(lab: Lab) -> int:
    """Compact etcd's history up to its current revision (what the API server does every 5
    minutes); the revision."""
    revision = int(etcd_call(lab, "/v3/kv/range", {"key": "Y29tcGFjdA=="})["header"]["revision"])
    etcd_call(lab, "/v3/kv/compaction", {"revision": revision, "physical": True})
    return revision


def restart_etcd(lab: Lab) -> None:
    """Stop the lab's etcd and start it again with the same command line and data (the PID file
    follows, so `scripts/k8s-lab stop` still finds it); wait until it answers."""
    pid_file = lab.dir / "run" / "etcd.pid"
    pid = int(pid_file.read_text())
    command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
    assert Path(command[0].decode()).name == "etcd", command
    os.kill(pid, signal.SIGTERM)

    def exited() -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    eventually(exited, "etcd to stop", timeout=20)
    with (lab.dir / "logs" / "etcd.log").open("ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            cwd=lab.dir, start_new_session=True,
        )  # fmt: skip
    pid_file.write_text(f"{process.pid}\n")

    def answers() -> bool:
        try:
            etcd_call(lab, "/v3/kv/range", {"key": "Y29tcGFjdA=="})
        except (OSError, AssertionError):
            return False
        return True

    eventually(answers, "etcd to answer again", timeout=30)
