"""Topology-aware placement on a real API server (issue 38): `scripts/k8s-lab start --racks 8`
labels 64 KWOK nodes of one GPU into 8 racks (round robin, so name order crosses racks); the
portal, running the Kubernetes agent on that lab, reads the labels, an admin names the rack
label as the pool's level, and a 4-pod gang that requires one rack is bound to nodes of a single
rack, while the same gang without the constraint spans racks (R23.2)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config
from kubernetes.config import kube_config

from tests.k8s.lab import Lab, start_lab, stop_lab
from tests.k8s.portal_lab import Rest, clean, eventually, job_pods
from tests.k8s.test_external_on_lab import pod_template

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
RACK = "allot.io/rack"
MANAGED = "app.kubernetes.io/managed-by"


@pytest.fixture(scope="module")
def racked_lab() -> Iterator[Lab]:
    """A lab of its own: 64 one-GPU nodes in 8 racks."""
    workdir, state = start_lab(
        "allot-k8s-topology-", "--nodes", "64", "--gpus-per-node", "1", "--racks", "8"
    )
    api = config.new_client_from_config(config_file=state["kubeconfig"])
    lab = Lab(dir=workdir, kubeconfig=Path(state["kubeconfig"]), server=state["server"],
              nodes=state["nodes"], gpus_per_node=1, api_client=api)  # fmt: skip
    try:
        yield lab
    finally:
        stop_lab(lab)


@pytest.fixture
def rest(racked_lab: Lab, settings, monkeypatch, api, cluster_admin) -> Iterator[Rest]:
    """The portal's agent is the Kubernetes agent on `racked_lab` (as `portal_on_lab` does for
    the shared lab); the nodes are read by a first cycle."""
    from portal.scheduling import agent as agent_module

    monkeypatch.setenv("KUBECONFIG", str(racked_lab.kubeconfig))
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(racked_lab.kubeconfig))
    settings.ALLOT_AGENT = "kubernetes"
    settings.ALLOT_K8S_GRACE_PERIOD_S = 0
    monkeypatch.setattr(agent_module, "_agent", None)
    agent = agent_module.get_agent()
    made = Rest(api(cluster_admin))
    try:
        made.settle()
        yield made
    finally:
        agent.close()
        agent_module._agent = None
        clean(racked_lab.core)


def racks_of(core: client.CoreV1Api, project: str) -> set[str]:
    """The racks of the nodes the project's job pods are bound to (all of them bound)."""
    nodes = {n.metadata.name: n.metadata.labels[RACK] for n in core.list_node().items}
    bound = {pod: node for (owner, pod), node in job_pods(core).items() if owner == project}
    assert len(bound) == 4 and all(bound.values()), bound
    return {nodes[node] for node in bound.values()}


def test_r23_2_a_gang_that_requires_a_rack_is_bound_to_one_racks_nodes(rest, racked_lab):
    core = racked_lab.core
    nodes = rest.call("get", "nodes/?page_size=100")
    nodes = nodes["results"] if isinstance(nodes, dict) else nodes
    assert len(nodes) == 64
    assert {node["labels"][RACK] for node in nodes} == {f"rack-{i}" for i in range(8)}
    rest.call("post", "topology/", {"pool": "default", "levels": [RACK]})
    rest.project("spread", 8)
    rest.project("packed", 8)
    rest.submit("spread", "ddp", 1, pods=4)
    rest.submit("packed", "ddp", 1, pods=4, topology={"required": "rack"})
    rest.all_running(timeout=60)
    eventually(lambda: all(job_pods(core).values()) and len(job_pods(core)) == 8,
               "the 8 pods to be bound", timeout=60)  # fmt: skip
    assert len(racks_of(core, "spread")) > 1  # name order crosses racks
    (rack,) = racks_of(core, "packed")
    assert rest.job("packed", "ddp")["domain"] == f"rack {rack}"


def test_r23_2_a_job_annotated_for_kai_is_bound_to_one_rack(rest, racked_lab):
    """Issue 38: a batch/v1 Job made with KAI's placement annotation (on the Job, where KAI's
    pod-grouper reads it) and `schedulerName: allot` gets the constraint and is bound to one
    rack's nodes, as it would under KAI."""
    core, batch = racked_lab.core, client.BatchV1Api(racked_lab.api_client)
    rest.call("post", "topology/", {"pool": "default", "levels": [RACK]})
    rest.project("kai", 8)
    namespace = "allot-kai"
    core.create_namespace({"metadata": {"name": namespace, "labels": {MANAGED: "allot"}}})
    annotations = {"kai.scheduler/topology-required-placement": RACK}
    batch.create_namespaced_job(namespace, {
        "metadata": {"name": "ddp", "annotations": annotations},
        "spec": {"parallelism": 4, "completions": 4, "template": pod_template()},
    })  # fmt: skip
    try:

        def bound() -> bool:
            rest.settle()
            pods = core.list_namespaced_pod(namespace, label_selector="job-name=ddp").items
            return len(pods) == 4 and all(pod.spec.node_name for pod in pods)

        eventually(bound, "the Job's 4 pods bound", timeout=90)
        pods = core.list_namespaced_pod(namespace, label_selector="job-name=ddp").items
        racks = {n.metadata.name: n.metadata.labels[RACK] for n in core.list_node().items}
        assert len({racks[pod.spec.node_name] for pod in pods}) == 1
        assert rest.job("kai", "ddp")["topology"] == {"required": RACK}
    finally:
        batch.delete_namespaced_job("ddp", namespace, propagation_policy="Background")
