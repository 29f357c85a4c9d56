"""Fractions, reclaim and gangs carried out on a real API server (issue 25).

The portal runs ALLOT_AGENT=kubernetes on the lab (`portal_lab`), driven through its REST API:

- fractions: one reservation pod per shared device (in `allot-system`, holding
  `nvidia.com/gpu: 1` on the planned node), the fractional pods requesting no GPU and told their
  device and share; a reservation no fractional pod uses any more is deleted;
- reclaim (R9): a project below its quota takes GPUs back; the evicted jobs' pods are deleted,
  they return to Pending, and the new pods are bound where the portal planned;
- gangs all or nothing (R6.1): a ResourceQuota in the project's namespace admits only the first
  of a gang's pods; no pod of that gang stays, the job fails with the API's message, and the
  project's other job and another project's job run on.
"""

from __future__ import annotations

import pytest
from kubernetes import client

import agents.kubernetes.agent as kubernetes_agent
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    GPU_MEMORY_MIB,
    RESERVATIONS,
    Rest,
    cluster_matches,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    job_pods,
    reservations,
    shared_devices,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
GPU = "nvidia.com/gpu"


@pytest.fixture
def rest(portal_on_lab, api, cluster_admin) -> Rest:
    made = Rest(api(cluster_admin))
    made.settle()  # a first cycle reads the cluster's nodes (submissions are checked against them)
    return made


def container(core: client.CoreV1Api, project: str, pod: str) -> client.V1Container:
    return core.read_namespaced_pod(pod, f"allot-{project}").spec.containers[0]


def test_fractions_share_a_device_held_by_a_reservation_pod_released_when_unused(
    rest, allot_lab, monkeypatch
):
    monkeypatch.setattr(kubernetes_agent, "RESERVATION_GRACE_S", 0.5)  # KAI-like, but quick
    core = allot_lab.core
    rest.project("frac", 4)
    for name in ("half-1", "half-2", "half-3"):
        rest.submit("frac", name, 0.5, type="interactive")
        rest.settle()
    rest.submit("frac", "whole", 2)
    rest.settle()
    rows = rest.all_running()
    cluster_matches(core, rows)
    places = {job["name"]: job["placement"][0] for job in rows}
    # 0.5 + 0.5 fill the fullest device that fits; the third takes another device
    assert places["half-1"]["node"] == places["half-2"]["node"]
    assert places["half-1"]["devices"] == places["half-2"]["devices"]
    assert places["half-3"]["devices"] != places["half-1"]["devices"]
    shared = shared_devices(rows)
    assert len(shared) == 2
    held = reservations(core)
    assert held == dict.fromkeys(shared, True)  # one Running reservation per shared device
    for pod in core.list_namespaced_pod(RESERVATIONS).items:
        limits = pod.spec.containers[0].resources.limits
        assert limits == {GPU: "1"} and pod.spec.scheduler_name == "allot"
    for name in ("half-1", "half-3"):
        main = container(core, "frac", f"{name}-0")
        env = {variable.name: variable.value for variable in main.env or []}
        assert env["NVIDIA_VISIBLE_DEVICES"] == ",".join(map(str, places[name]["devices"]))
        assert env["ALLOT_GPU_FRACTION"] == "0.5"
        assert env["ALLOT_GPU_MEMORY_MIB"] == str(GPU_MEMORY_MIB // 2)
        assert GPU not in ((main.resources.limits or {}) | (main.resources.requests or {}))
    assert container(core, "frac", "whole-0").resources.limits == {GPU: "2"}

    # half-3 leaves: its device is released; half-1 leaves: half-2 still uses that device
    def released(left: set) -> bool:
        rest.settle()  # the agent frees reservations when it observes
        return set(reservations(core)) == left

    rest.delete("frac", "half-3")
    first = (places["half-1"]["node"], str(places["half-1"]["devices"][0]))
    eventually(lambda: released({first}), "half-3's reservation pod to be deleted")
    rest.delete("frac", "half-1")
    rest.settle()
    assert set(reservations(core)) == {first}
    rest.delete("frac", "half-2")
    eventually(lambda: released(set()), "the last reservation pod to be deleted")
    cluster_matches(core, rest.jobs())  # only `whole` is left


def test_a_project_below_its_quota_reclaims_gpus_the_evicted_pods_go_the_new_ones_are_bound(
    rest, allot_lab
):
    core = allot_lab.core
    rest.project("lender", 4)
    rest.project("owner", 8)
    for index in range(16):  # every GPU of the cluster, 12 over lender's quota
        rest.submit("lender", f"borrow-{index}", 1)
    rest.settle()
    cluster_matches(core, rest.all_running())
    for index in range(4):
        rest.submit("owner", f"mine-{index}", 1)
        rest.settle()
    rows = rest.all_running()
    placed = cluster_matches(core, rows)  # the victims' pods deleted, the owner's bound
    status = {(job["project"], job["name"]): job["status"] for job in rest.jobs()}
    evicted = sorted(name for (project, name), state in status.items() if state == "Pending")
    assert len(evicted) == 4 and all(name.startswith("borrow-") for name in evicted)
    assert not [key for key in placed if key[1].removesuffix("-0") in evicted]
    assert {("owner", f"mine-{i}-0") for i in range(4)} <= placed.keys()
    assert sum(1 for key in placed if key[0] == "lender") == 12
    reasons = [e["message"] for e in rest.events("lender", evicted[0])]
    assert any("owner" in message and "R9" in message for message in reasons), reasons


def test_a_gang_the_resource_quota_admits_only_in_part_leaves_no_pod_and_fails(rest, allot_lab):
    core = allot_lab.core
    namespace = "allot-gangs"
    core.create_namespace(
        client.V1Namespace(
            metadata=client.V1ObjectMeta(
                name=namespace,
                labels={"app.kubernetes.io/managed-by": "allot", "allot.io/project": "gangs"},
            )
        )
    )
    quota = client.V1ResourceQuota(
        metadata=client.V1ObjectMeta(name="gpus"),
        spec=client.V1ResourceQuotaSpec(hard={f"requests.{GPU}": "4"}),
    )
    core.create_namespaced_resource_quota(namespace, quota)
    eventually(  # admission enforces a quota once the controller has counted its usage
        lambda: core.read_namespaced_resource_quota("gpus", namespace).status.hard,
        "the ResourceQuota's status",
    )
    rest.project("gangs", 16)
    rest.project("others", 4)
    rest.submit("gangs", "solo", 2)  # 2 of the namespace's 4 GPUs
    rest.settle()
    rest.submit("others", "bystander", 1)
    rest.settle()
    cluster_matches(core, rest.all_running())

    rest.submit("gangs", "gang", 2, pods=2)  # pod 0 fits the quota, pod 1 does not
    rest.settle()
    rest.status_becomes("gangs", "gang", "Failed")
    assert not [key for key in job_pods(core) if key[1].startswith("gang-")]
    failure = [e["message"] for e in rest.events("gangs", "gang") if e["kind"] == "failed"]
    assert len(failure) == 1 and 'pods "gang-1" is forbidden: exceeded quota' in failure[0]
    rows = rest.all_running()
    assert {(job["project"], job["name"]) for job in rows} == {
        ("gangs", "solo"),
        ("others", "bystander"),
    }
    placed = cluster_matches(core, rows)
    assert set(placed) == {("gangs", "solo-0"), ("others", "bystander-0")}
