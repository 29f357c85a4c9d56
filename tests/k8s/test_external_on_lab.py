"""Workloads other tools made, scheduled by Allot on a real API server (issue 33).

Each is created as a user would, with the official client and `schedulerName: allot`, in the
project's namespace; the portal (`ALLOT_AGENT=kubernetes` on the lab, driven through REST) must
bind it where it plans, all or nothing for a gang, show it under its project, and tell a pod
that waits why (a Kubernetes Event, as kube-scheduler does). Pods another scheduler bound take
their GPUs out of Allot's room. The lab's Job pods carry `allot.io/lab-keep-running` so KWOK
keeps them Running (scripts/k8s-lab).
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    Rest,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
GPU = "nvidia.com/gpu"
KEEP = {"allot.io/lab-keep-running": "yes"}


@pytest.fixture
def rest(portal_on_lab, api, cluster_admin) -> Rest:
    made = Rest(api(cluster_admin))
    made.settle()
    return made


@pytest.fixture
def kube(allot_lab):
    """The lab's clients, and clean-up of the namespaces and objects a test made."""
    made: list[str] = []

    class Kube:
        core = allot_lab.core
        batch = client.BatchV1Api(allot_lab.api_client)
        apps = client.AppsV1Api(allot_lab.api_client)
        custom = client.CustomObjectsApi(allot_lab.api_client)

        def namespace(self, name: str) -> str:
            body = {"metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "allot"}}}
            try:
                self.core.create_namespace(body)
            except ApiException as exc:
                if exc.status != 409:
                    raise
            made.append(name)
            return name

    yield Kube()
    for name in made:
        for api_call in (Kube.batch.delete_collection_namespaced_job,
                         Kube.apps.delete_collection_namespaced_deployment,
                         Kube.core.delete_collection_namespaced_pod):  # fmt: skip
            try:
                api_call(name, propagation_policy="Background", grace_period_seconds=0)
            except (ApiException, TypeError):
                api_call(name)


def pod_template(gpus: int = 1, labels: dict | None = None) -> dict:
    return {
        "metadata": {"labels": {**KEEP, **(labels or {})}},
        "spec": {
            "schedulerName": "allot",
            "restartPolicy": "Never",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"limits": {GPU: str(gpus)}}}
            ],
        },
    }


def bare_pod(name: str, gpus: int = 1) -> dict:
    """A Pod of its own (no owner) asking for Allot."""
    made = pod_template(gpus)
    made["metadata"]["name"] = name
    return made


def pods_of(core, namespace: str, **selector) -> list[client.V1Pod]:
    label = ",".join(f"{k}={v}" for k, v in selector.items()) or None
    found = core.list_namespaced_pod(namespace, label_selector=label).items
    return [pod for pod in found if pod.metadata.deletion_timestamp is None]


def bound_running(pods: list[client.V1Pod]) -> bool:
    return bool(pods) and all(p.spec.node_name and p.status.phase == "Running" for p in pods)


def events_of(core, namespace: str, pod: str) -> list[str]:
    selector = f"involvedObject.name={pod}"
    return [
        e.message or ""
        for e in core.list_namespaced_event(namespace, field_selector=selector).items
    ]


def settle_until(rest: Rest, check, what: str, timeout: float = 60):
    def done():
        rest.settle()
        return check()

    return eventually(done, what, timeout)


def test_a_plain_pod_is_bound_by_allot_and_shown_under_its_project(rest, kube):
    rest.project("ext-pod", 4)
    namespace = kube.namespace("allot-ext-pod")
    kube.core.create_namespaced_pod(namespace, bare_pod("solo"))  # fmt: skip
    settle_until(rest, lambda: bound_running(pods_of(kube.core, namespace)), "solo Running")
    job = rest.status_becomes("ext-pod", "solo", "Running")
    assert job["external"] == {"namespace": namespace, "kind": "Pod", "owner": "solo"}
    pod = kube.core.read_namespaced_pod("solo", namespace)
    assert pod.spec.node_name == job["placement"][0]["node"]


def test_r6_1_a_job_of_four_starts_all_or_nothing(rest, kube):
    rest.project("ext-job", 16)
    rest.project("filler", 16)
    for index in range(13):  # 13 of the 16 GPUs held: 3 free
        rest.submit("filler", f"f{index}", 1)
    rest.all_running()
    namespace = kube.namespace("allot-ext-job")
    kube.batch.create_namespaced_job(namespace, {
        "metadata": {"name": "four"},
        "spec": {"parallelism": 4, "completions": 4, "template": pod_template()},
    })  # fmt: skip
    settle_until(rest, lambda: len(pods_of(kube.core, namespace, **{"job-name": "four"})) == 4,
                 "the Job's four pods")  # fmt: skip
    for _ in range(3):
        rest.settle()
    pods = pods_of(kube.core, namespace, **{"job-name": "four"})
    assert not any(pod.spec.node_name for pod in pods)  # none of the gang with 3 free
    job = rest.job("ext-job", "four")
    assert job["status"] == "Pending" and job["pods"] == 4 and job["external"]["kind"] == "Job"
    first = pods[0].metadata.name  # it says why it waits, as kubectl describe shows it
    settle_until(rest, lambda: any("ext-job/four waits: " in message
                                   for message in events_of(kube.core, namespace, first)),
                 "the waiting reason in the pod's Events")  # fmt: skip
    rest.delete("filler", "f0")  # now 4 free
    settle_until(rest, lambda: bound_running(pods_of(kube.core, namespace, **{"job-name": "four"})),
                 "the four pods Running")  # fmt: skip
    assert rest.status_becomes("ext-job", "four", "Running")["pods"] == 4


def test_a_deployment_of_three_is_three_workloads_placed_one_by_one(rest, kube):
    rest.project("ext-dep", 8)
    namespace = kube.namespace("allot-ext-dep")
    kube.apps.create_namespaced_deployment(namespace, {
        "metadata": {"name": "serve"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "serve"}},
                 "template": {**pod_template(labels={"app": "serve"}),
                              "spec": {**pod_template()["spec"], "restartPolicy": "Always"}}},
    })  # fmt: skip

    def three_running():
        pods = pods_of(kube.core, namespace, app="serve")
        return len(pods) == 3 and bound_running(pods)

    settle_until(rest, three_running, "3 replicas Running")
    rows = [j for j in rest.jobs() if j["project"] == "ext-dep"]
    assert len(rows) == 3 and all(j["pods"] == 1 and j["external"]["kind"] == "Deployment"
                                  for j in rows)  # fmt: skip


def test_gpus_bound_by_another_scheduler_are_not_given_again(rest, kube, allot_lab):
    rest.project("ext-full", 16)
    namespace = kube.namespace("allot-ext-outside")
    for node in allot_lab.nodes:  # another scheduler's pods: bound straight to the nodes
        kube.core.create_namespaced_pod(namespace, {
            "metadata": {"name": f"other-{node}"},
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox",
                     "resources": {"limits": {GPU: "8"}}}]},
        })  # fmt: skip
    rest.submit("ext-full", "wants-one", 1)
    for _ in range(3):
        rest.settle()
    job = rest.job("ext-full", "wants-one")
    assert job["status"] == "Pending"
    assert "held by pods outside Allot" in job["pending_reason"]
    overview = rest.call("get", "overview/")
    assert overview["cluster"]["outside_gpus"] == 16


def test_reclaim_evicts_an_external_borrower_for_a_project_under_its_quota(rest, kube):
    rest.project("lender", 0, over_quota_weight=1)
    rest.project("owner", 8)
    namespace = kube.namespace("allot-lender")
    kube.batch.create_namespaced_job(namespace, {
        "metadata": {"name": "borrow"},
        "spec": {"parallelism": 16, "completions": 16, "backoffLimit": 100,
                 # as Kueue's and Allot's docs advise: an eviction is not the pod's failure
                 "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [
                     {"type": "DisruptionTarget"}]}]},
                 "template": pod_template()},
    })  # fmt: skip

    def borrowed():
        pods = pods_of(kube.core, namespace)
        return len([p for p in pods if p.spec.node_name and p.status.phase == "Running"]) == 16

    settle_until(rest, borrowed, "16 borrowed")
    evicted = {p.metadata.uid for p in pods_of(kube.core, namespace)}
    rest.submit("owner", "mine", 8)
    job = rest.status_becomes("owner", "mine", "Running", timeout=90)
    assert job["status"] == "Running"
    borrow = rest.job("lender", "borrow")
    assert borrow["status"] == "Pending"

    # its pods were evicted: none of them is bound any more
    assert not [p for p in pods_of(kube.core, namespace) if p.spec.node_name]

    # the Job controller recreates them (new uids) within seconds, not after its back-off (10 s
    # doubling per failed pod, ignored ones included: 16 evicted pods made it wait 10 min); they
    # wait, unbound, and say why
    def recreated():
        rest.settle()
        pods = pods_of(kube.core, namespace, **{"job-name": "borrow"})
        new = [p for p in pods if p.metadata.uid not in evicted]
        return new if len(new) == 16 else None

    replacements = eventually(recreated, "the Job's 16 replacement pods", timeout=60)
    assert all(p.status.phase == "Pending" and not p.spec.node_name for p in replacements)
    first = replacements[0].metadata.name
    settle_until(rest, lambda: any("lender/borrow waits: " in message
                                   for message in events_of(kube.core, namespace, first)),
                 "the waiting reason in a replacement's Events")  # fmt: skip
    assert rest.job("owner", "mine")["status"] == "Running"
    assert rest.job("lender", "borrow")["status"] == "Pending"
    borrow_job = kube.batch.read_namespaced_job("borrow", namespace)
    assert not borrow_job.spec.suspend and not borrow_job.status.failed  # resumed, no failure
    assert "allot.io/evicting" not in (borrow_job.metadata.labels or {})


def test_a_pod_in_a_namespace_of_no_project_waits_with_an_event_saying_why(rest, kube):
    namespace = kube.namespace("research-unmapped")
    kube.core.create_namespaced_pod(namespace, bare_pod("lost"))
    settle_until(
        rest,
        lambda: any("belongs to no Allot project" in m
                    for m in events_of(kube.core, namespace, "lost")),
        "the Event on the unmapped pod",
    )  # fmt: skip
    assert not kube.core.read_namespaced_pod("lost", namespace).spec.node_name


def test_a_jobset_of_two_jobs_of_two_pods_is_one_gang_of_four(rest, kube):
    """The JobSet controller (built into the lab, `start --jobset`) makes 2 Jobs x 2 pods; Allot
    groups them by their top owner, the JobSet, and places the four together."""
    rest.project("ext-set", 8)
    namespace = kube.namespace("allot-ext-set")
    replicated = [
        {"name": role, "replicas": 1,
         "template": {"spec": {"parallelism": 2, "completions": 2, "template": pod_template()}}}
        for role in ("workers", "launchers")
    ]  # fmt: skip
    kube.custom.create_namespaced_custom_object(
        "jobset.x-k8s.io", "v1alpha2", namespace, "jobsets",
        {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
         "metadata": {"name": "trainer"}, "spec": {"replicatedJobs": replicated}},
    )  # fmt: skip
    selector = {"jobset.sigs.k8s.io/jobset-name": "trainer"}

    def four_running():
        pods = pods_of(kube.core, namespace, **selector)
        return len(pods) == 4 and bound_running(pods)

    settle_until(rest, four_running, "the JobSet's four pods Running", timeout=90)
    rows = [j for j in rest.jobs() if j["project"] == "ext-set"]
    assert len(rows) == 1, rows
    assert rows[0]["pods"] == 4 and rows[0]["external"]["kind"] == "JobSet"
    assert rows[0]["external"]["owner"] == "trainer"
