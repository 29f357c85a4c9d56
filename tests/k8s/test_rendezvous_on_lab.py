"""A two-pod Allot job on the lab rendezvouses by DNS (issue 33): a headless Service named after
the job, each pod `hostname`/`subdomain` under it and the variables torchrun and Kubeflow's
trainer read, ranks 0 and 1, `MASTER_ADDR` pod 0's name through the Service (whose
EndpointSlices name each pod by its hostname, as cluster DNS needs); stopping the job deletes
the Service."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client

from agents.base import JobSpec, PodSpec
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    NODES,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    running_pods,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]


def env(pod: client.V1Pod) -> dict[str, str]:
    return {item.name: item.value for item in pod.spec.containers[0].env or ()}


def test_a_two_pod_job_gets_a_headless_service_and_the_rendezvous_variables(portal_on_lab,
                                                                            allot_lab):  # fmt: skip
    agent, core = portal_on_lab, allot_lab.core
    placement = (PodSpec(NODES[0], (0,)), PodSpec(NODES[1], (0,)))
    job = JobSpec("economy", "ddp", placement, datetime.now(UTC), pods=2,
                  command="torchrun --nnodes 2 --nproc-per-node 1 train.py")  # fmt: skip
    agent.observe()
    agent.start(job)
    eventually(lambda: len([k for k in running_pods(core) if k[0] == "economy"]) == 2,
               "both pods run")  # fmt: skip
    service = core.read_namespaced_service("ddp", "allot-economy")
    assert service.spec.cluster_ip == "None"  # headless: the name resolves to the pods
    assert service.spec.publish_not_ready_addresses is True
    assert service.spec.selector == {"allot.io/project": "economy", "allot.io/job": "ddp"}
    pods = [core.read_namespaced_pod(f"ddp-{rank}", "allot-economy") for rank in (0, 1)]
    master = f"{pods[0].spec.hostname}.{pods[0].spec.subdomain}.allot-economy.svc"
    assert master == "ddp-0.ddp.allot-economy.svc"  # <hostname>.<service>.<namespace>.svc
    for rank, pod in enumerate(pods):
        assert (pod.spec.hostname, pod.spec.subdomain) == (f"ddp-{rank}", "ddp")
        variables = env(pod)
        assert (variables["RANK"], variables["NODE_RANK"], variables["PET_NODE_RANK"]) == (
            str(rank), str(rank), str(rank))  # fmt: skip
        assert variables["MASTER_ADDR"] == variables["PET_MASTER_ADDR"] == master
        assert variables["MASTER_PORT"] == variables["PET_MASTER_PORT"] == "29500"
        assert variables["WORLD_SIZE"] == variables["PET_NNODES"] == "2"
        assert variables["ALLOT_HOSTS"] == f"{master},ddp-1.ddp.allot-economy.svc"
        assert pod.spec.containers[0].command == ["torchrun", "--nnodes", "2",
                                                  "--nproc-per-node", "1", "train.py"]  # fmt: skip
    # What CoreDNS answers <hostname>.<service>.<namespace>.svc from: the Service's
    # EndpointSlices (kube-controller-manager's) name each pod by its hostname, with its IP
    discovery = client.DiscoveryV1Api(agent.api)

    def named() -> dict[str, list[str]]:
        slices = discovery.list_namespaced_endpoint_slice(
            "allot-economy", label_selector="kubernetes.io/service-name=ddp").items  # fmt: skip
        return {e.hostname: e.addresses for s in slices for e in s.endpoints or () if e.hostname}

    eventually(lambda: set(named()) == {"ddp-0", "ddp-1"}, "both pods named in the Service")
    ips = {f"ddp-{rank}": [pod.status.pod_ip] for rank, pod in enumerate(
        core.read_namespaced_pod(f"ddp-{rank}", "allot-economy") for rank in (0, 1))}  # fmt: skip
    assert named() == ips and all(ip for (ip,) in ips.values())
    agent.stop("economy", "ddp")
    names = lambda: [s.metadata.name for s in core.list_namespaced_service("allot-economy").items]  # noqa: E731
    eventually(lambda: "ddp" not in names(), "the headless Service is deleted with the job")
