"""Pods other tools made that ask for Allot, on the real lab (issue 33; the GPU check of issue 40).

A bare Pod, a Job of parallelism 4 and a Deployment of 3 whose pods name `allot` as their
scheduler are seen as Workloads grouped by top owner; a start labels and binds a workload's pods
(KWOK runs them); a stop deletes them and the Job controller makes new ones; `explain` leaves an
Event and a PodScheduled=False condition; a pod bound by another scheduler counts on its node;
a device a live pod of another job holds is never given to a new one.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from agents.base import JobSpec, PodSpec
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    NODES,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]

_numbers = itertools.count()
RESOURCES = {"requests": {"cpu": "500m", "memory": "256Mi"}, "limits": {"nvidia.com/gpu": "1"}}


@pytest.fixture(name="ns")
def fixture_ns(allot_lab):
    """A namespace of another team's tools, deleted with what it holds after the test."""
    name = f"ext-{next(_numbers)}-{datetime.now(UTC).strftime('%H%M%S')}"
    allot_lab.core.create_namespace({"metadata": {"name": name}})
    yield name
    allot_lab.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
    try:
        allot_lab.core.delete_namespace(name)
    except ApiException as exc:
        if exc.status != 404:
            raise


def template(app: str = "ext", **extra) -> dict:
    return {
        "metadata": {"labels": {"app": app}},
        "spec": {
            "schedulerName": "allot",
            "restartPolicy": "Never",
            "containers": [{"name": "work", "image": "busybox", "resources": RESOURCES}],
            **extra,
        },
    }


def bare_pod(core: client.CoreV1Api, ns: str, name: str) -> None:
    body = template()
    body["metadata"]["name"] = name
    core.create_namespaced_pod(ns, body)


def batch_job(api: client.ApiClient, ns: str, name: str, parallelism: int) -> None:
    client.BatchV1Api(api).create_namespaced_job(ns, {
        "metadata": {"name": name},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": template()},
    })  # fmt: skip


def deployment(api: client.ApiClient, ns: str, name: str, replicas: int) -> None:
    pod = template(app=name)  # its own label: the ReplicaSet adopts no other pod
    pod["spec"]["restartPolicy"] = "Always"
    client.AppsV1Api(api).create_namespaced_deployment(ns, {
        "metadata": {"name": name},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": pod},
    })  # fmt: skip


def workloads(agent, ns: str, count: int) -> list:
    def seen():
        found = [w for w in agent.observe().workloads if w.ref.namespace == ns]
        return found if len(found) == count and all(len(w.pods) for w in found) else None

    return eventually(seen, f"{count} workloads in {ns}")  # type: ignore[return-value]


def test_a_bare_pod_a_job_and_a_deployment_are_grouped_by_top_owner(portal_on_lab, allot_lab, ns):
    agent = portal_on_lab
    bare_pod(allot_lab.core, ns, "alone")
    batch_job(allot_lab.api_client, ns, "train", 4)
    deployment(allot_lab.api_client, ns, "serve", 3)

    def all_pods():
        found = [w for w in agent.observe().workloads if w.ref.namespace == ns]
        return found if sum(len(w.pods) for w in found) == 8 else None

    found = eventually(all_pods, "the 8 pods as workloads")
    by_kind = sorted((w.ref.kind, w.size, len(w.pods)) for w in found)
    assert by_kind == [
        ("Deployment", 1, 1), ("Deployment", 1, 1), ("Deployment", 1, 1), ("Job", 4, 4),
        ("Pod", 1, 1),
    ]  # fmt: skip
    job = next(w for w in found if w.ref.kind == "Job")
    assert job.ref.owner == "train" and not job.complete
    assert (job.gpus, job.cpu_millis, job.memory_bytes) == (1.0, 500, 256 * 2**20)
    assert all(p.node == "" for w in found for p in w.pods)


def _start(agent, ns: str, owner: str, pods: int, devices_from: int = 0) -> JobSpec:
    workload = next(w for w in workloads(agent, ns, 1) if w.ref.owner == owner)
    placement = tuple(PodSpec(NODES[i % 2], (devices_from + i // 2,)) for i in range(pods))
    return JobSpec("extproj", f"{owner}-{ns}", placement, datetime.now(UTC), gpus=1, pods=pods,
                   external=workload.ref)  # fmt: skip


def test_a_start_binds_and_labels_the_gang(portal_on_lab, allot_lab, ns):
    agent, core = portal_on_lab, allot_lab.core
    batch_job(allot_lab.api_client, ns, "train", 4)
    eventually(lambda: len(workloads(agent, ns, 1)[0].pods) == 4, "the Job's 4 pods")
    spec = _start(agent, ns, "train", 4)
    agent.start(spec)
    pods = core.list_namespaced_pod(ns).items
    assert sorted(p.spec.node_name for p in pods) == sorted(NODES * 2)
    assert sorted(p.metadata.labels["allot.io/pod-index"] for p in pods) == ["0", "1", "2", "3"]
    assert {p.metadata.labels["allot.io/job"] for p in pods} == {spec.name}
    assert {p.metadata.annotations["allot.io/node"] for p in pods} == set(NODES)
    agent.start(spec)  # idempotent: nothing bound twice, nothing deleted
    assert {p.metadata.uid for p in core.list_namespaced_pod(ns).items} == {
        p.metadata.uid for p in pods}  # fmt: skip

    def ran():  # KWOK runs a Job's pods and ends them at once
        status = agent.observe().jobs.get(spec.key)
        return status if status is not None and status.phase in ("Running", "Succeeded") else None

    status = eventually(ran, "the adopted pods reported as the job's")
    assert sorted(p.node for p in status.pods) == sorted(NODES * 2)
    direct = agent.status(spec)  # found by its labels in the workload's namespace
    assert direct.phase in ("Running", "Succeeded") and len(direct.pods) == 4


def test_a_stop_deletes_the_pods_and_their_owner_makes_new_ones(portal_on_lab, allot_lab, ns):
    agent, core = portal_on_lab, allot_lab.core
    deployment(allot_lab.api_client, ns, "serve", 1)
    spec = _start(agent, ns, workloads(agent, ns, 1)[0].ref.owner, 1)
    agent.start(spec)

    def running():
        status = agent.observe().jobs.get(spec.key)
        return status if status is not None and status.phase == "Running" else None

    eventually(running, "the adopted pod Running")
    old = {p.metadata.uid for p in core.list_namespaced_pod(ns).items}
    agent.stop(*spec.key)

    def recreated():
        pods = core.list_namespaced_pod(ns).items
        new = [p for p in pods if p.metadata.uid not in old]
        gone = not [p for p in pods if p.metadata.uid in old]
        return gone and len(new) == 1 and not new[0].spec.node_name

    eventually(recreated, "the pod deleted and its ReplicaSet's new one waiting unbound", 60)
    assert spec.key not in agent.observe().jobs


def test_explain_posts_an_event_and_a_condition_once_per_text(portal_on_lab, allot_lab, ns):
    agent, core = portal_on_lab, allot_lab.core
    bare_pod(core, ns, "waits")
    ref = workloads(agent, ns, 1)[0].ref
    agent.explain({ref.uid: "waiting: project extproj has no GPUs free"})
    agent.explain({ref.uid: "waiting: project extproj has no GPUs free"})  # the same: no event

    def events():
        found = core.list_namespaced_event(ns).items
        return found if found else None

    found = eventually(events, "the Event")
    assert len(found) == 1
    assert (found[0].reason, found[0].source.component) == ("AllotWaiting", "allot")
    assert found[0].involved_object.name == "waits"
    assert found[0].message == "waiting: project extproj has no GPUs free"
    pod = core.read_namespaced_pod("waits", ns)
    scheduled = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "Unschedulable")
    assert scheduled.message == "waiting: project extproj has no GPUs free"
    agent.explain({ref.uid: "waiting: 3 workloads before it"})
    eventually(lambda: len(core.list_namespaced_event(ns).items) == 2, "a second Event")


def test_a_pod_another_scheduler_bound_counts_on_its_node(portal_on_lab, allot_lab, ns):
    agent, core = portal_on_lab, allot_lab.core
    pod = template()
    pod["spec"].pop("schedulerName")
    pod["spec"]["nodeName"] = NODES[1]
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "2", "memory": "1Gi"},
        "limits": {"nvidia.com/gpu": "2"},
    }
    pod["metadata"]["name"] = "daemon"
    core.create_namespaced_pod(ns, pod)

    def counted():
        node = next(n for n in agent.observe().nodes if n.name == NODES[1])
        return node if node.outside_gpus else None

    node = eventually(counted, "the outside pod counted")
    assert (node.outside_gpus, node.outside_cpu_millis, node.outside_memory_bytes) == (
        2, 2000, 1024 * 2**20)  # fmt: skip
    other = next(n for n in agent.observe().nodes if n.name == NODES[0])
    assert other.outside_gpus == 0


def test_a_device_another_job_holds_is_not_given_to_a_new_pod(portal_on_lab, allot_lab, ns):
    agent, core = portal_on_lab, allot_lab.core
    mine = JobSpec("extown", "holder", (PodSpec(NODES[0], (5,)),), datetime.now(UTC))
    agent.start(mine)
    bare_pod(core, ns, "late")
    spec = _start(agent, ns, "late", 1, devices_from=5)  # NODES[0], device 5: held
    eventually(lambda: agent.watcher.snapshot(), "the holder in the watch")
    agent.start(spec)
    assert core.read_namespaced_pod("late", ns).spec.node_name is None
    status = agent.observe().jobs[spec.key]
    assert status.phase == "ContainerCreating"
    assert f"node {NODES[0]} device 5 is held by pod allot-extown/holder-0" in status.message
