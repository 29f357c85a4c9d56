"""External workloads without a cluster (issue 33): grouping by top owner through fake owner
chains (a JobSet, a StatefulSet, the annotations that set a gang), requests read as Kubernetes
reads them, the pods the watch keeps, and the device check of issue 40 on the fake API."""

from __future__ import annotations

import json
import threading
import time

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec, PodSpec
from agents.kubernetes import adopt, external
from agents.kubernetes import agent as agent_module
from agents.kubernetes.watch import kept
from tests.agents.kubernetes.test_agent import NOW, NS, job, observed


class FakeOwners(external.Owners):
    """Owners from a dict by uid (no API server)."""

    def __init__(self, objects: list[dict]):
        self.objects = {o["metadata"]["uid"]: o for o in objects}
        self.reads = 0

    def get(self, namespace, ref):
        self.reads += 1
        return self.objects.get(ref["uid"])


def owner(kind: str, name: str, api: str = "batch/v1", parent: dict | None = None, **fields):
    metadata = {"name": name, "uid": f"uid-{kind}-{name}",
                "creationTimestamp": "2026-11-28T10:00:00Z",
                "annotations": fields.pop("annotations", {})}  # fmt: skip
    if parent is not None:
        metadata["ownerReferences"] = [ref(parent)]
    return {"apiVersion": api, "kind": kind, "metadata": metadata, **fields}


def ref(obj: dict) -> dict:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True}  # fmt: skip


def pod(name: str, parent: dict | None = None, node: str = "", annotations=None,
        containers=None, **spec) -> dict:  # fmt: skip
    metadata = {"name": name, "namespace": "team-x", "uid": f"pod-{name}",
                "annotations": annotations or {}}  # fmt: skip
    if parent is not None:
        metadata["ownerReferences"] = [ref(parent)]
    resources = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"nvidia.com/gpu": "1"}}
    return {
        "metadata": metadata,
        "spec": {"schedulerName": "allot", "nodeName": node or None,
                 "containers": containers or [{"name": "c", "resources": resources}], **spec},
        "status": {"phase": "Running" if node else "Pending"},
    }  # fmt: skip


def test_a_jobsets_pods_are_one_gang_of_replicas_times_parallelism():
    jobset = owner("JobSet", "llm", "jobset.x-k8s.io/v1alpha2", spec={"replicatedJobs": [
        {"replicas": 2, "template": {"spec": {"parallelism": 3}}},
        {"replicas": 1, "template": {"spec": {}}}]})  # fmt: skip
    workers = owner("Job", "llm-workers-0", parent=jobset, spec={"parallelism": 3})
    leader = owner("Job", "llm-leader-0", parent=jobset, spec={})
    pods = [pod("w-0", workers), pod("w-1", workers), pod("l-0", leader)]
    found, member = external.workloads(pods, FakeOwners([jobset, workers, leader]))
    assert len(found) == 1
    assert (found[0].ref.kind, found[0].ref.owner, found[0].size) == ("JobSet", "llm", 7)
    assert [p.name for p in found[0].pods] == ["l-0", "w-0", "w-1"]
    assert set(member.values()) == {"uid-JobSet-llm"}


def test_a_jobs_gang_is_its_parallelism_capped_by_the_completions_left():
    train = owner("Job", "t", spec={"parallelism": 4, "completions": 5}, status={"succeeded": 3})
    found, _ = external.workloads([pod("t-a", train)], FakeOwners([train]))
    assert found[0].size == 2


def test_a_deployments_pods_stand_alone_and_a_statefulset_is_one_group_of_its_pods():
    deploy = owner("Deployment", "web", "apps/v1")
    replicas = owner("ReplicaSet", "web-1", "apps/v1", parent=deploy)
    sts = owner("StatefulSet", "db", "apps/v1")
    pods = [pod("web-1-a", replicas), pod("web-1-b", replicas), pod("db-0", sts), pod("db-1", sts)]
    found, _ = external.workloads(pods, FakeOwners([deploy, replicas, sts]))
    shapes = sorted((w.ref.kind, w.ref.owner, w.pods[0].name, w.size, len(w.pods)) for w in found)
    assert shapes == [
        ("Deployment", "web", "web-1-a", 1, 1),
        ("Deployment", "web", "web-1-b", 1, 1),
        ("StatefulSet", "db", "db-0", 2, 2),
    ]
    assert len({w.ref.uid for w in found}) == 3  # a Deployment's pods: a group each


def test_annotations_set_the_gang_allots_first_then_kais_then_kueues():
    sts = owner("StatefulSet", "db", "apps/v1", annotations={external.KAI_GANG: "4"})
    found, _ = external.workloads([pod("db-0", sts)], FakeOwners([sts]))
    assert found[0].size == 4
    mine = pod("db-0", sts, annotations={external.GANG_ANNOTATION: "6"})
    assert external.workloads([mine], FakeOwners([sts]))[0][0].size == 6
    queued = pod("solo", annotations={external.KUEUE_GANG: "3"})
    assert external.workloads([queued], FakeOwners([]))[0][0].size == 3


def test_topology_is_read_from_kais_and_kueues_annotations_allots_first():
    """Issue 38: KAI's placement annotations on the top owner (its pod-grouper reads them
    there), Kueue's on the pod template; Allot's own win over both, an empty value is none."""
    rack, block = "cloud.provider.com/topology-rack", "cloud.provider.com/topology-block"
    kai = owner("PyTorchJob", "ddp", "kubeflow.org/v1", annotations={
        "kai.scheduler/topology": "cluster-topology",
        "kai.scheduler/topology-required-placement": rack,
        "kai.scheduler/topology-preferred-placement": block})  # fmt: skip
    found, _ = external.workloads([pod("ddp-0", kai), pod("ddp-1", kai)], FakeOwners([kai]))
    assert (found[0].topology_required, found[0].topology_preferred) == (rack, block)
    train = owner("Job", "t", spec={"parallelism": 2})
    queued = {"kueue.x-k8s.io/podset-preferred-topology": rack}
    found, _ = external.workloads([pod("t-0", train, annotations=queued)], FakeOwners([train]))
    assert (found[0].topology_required, found[0].topology_preferred) == ("", rack)
    required = {"kueue.x-k8s.io/podset-required-topology": block,
                "allot.io/topology-required": "example.com/rack"}  # fmt: skip
    found, _ = external.workloads([pod("t-0", train, annotations=required)], FakeOwners([train]))
    assert found[0].topology_required == "example.com/rack"
    empty = {"kueue.x-k8s.io/podset-required-topology": ""}
    found, _ = external.workloads([pod("t-0", train, annotations=empty)], FakeOwners([train]))
    assert (found[0].topology_required, found[0].topology_preferred) == ("", "")


def test_requests_are_read_as_the_scheduler_reads_them():
    containers = [
        {
            "name": "a",
            "resources": {
                "requests": {"cpu": "250m", "memory": "100Mi"},
                "limits": {"cpu": "1", "memory": "200Mi"},
            },
        },
        {"name": "b", "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}},
    ]
    init = [{"name": "setup", "resources": {"requests": {"cpu": "4"}}},
            {"name": "proxy", "restartPolicy": "Always",
             "resources": {"requests": {"cpu": "100m", "memory": "50Mi"}}}]  # fmt: skip
    one = pod("p", containers=containers, initContainers=init, overhead={"cpu": "10m"})
    fields = external.requests_of(one)
    # cpu: max(250 + 500 + 100 sidecar, 4000 init) + 10 overhead; memory: 100 + 1024 + 50
    assert fields["cpu_millis"] == 4010
    assert fields["memory_bytes"] == 1174 * 2**20
    assert (fields["cpu_limit_millis"], fields["memory_limit_bytes"]) == (1500, 1224 * 2**20)
    assert (fields["gpus"], fields["gpu_memory_bytes"]) == (0.0, None)
    half = pod("h", annotations={"gpu-fraction": "0.5"}, containers=[{"name": "c"}])
    assert external.gpus(half) == (0.5, None)
    memory = pod("m", annotations={"gpu-memory": "4096"}, containers=[{"name": "c"}])
    assert external.gpus(memory) == (0.0, 4096 * 2**20)  # a bare number is MiB in KAI


def test_the_watch_keeps_allots_pods_those_asking_for_it_and_live_bound_ones():
    assert kept(pod("asks"))
    other = pod("daemon", node="n1")
    other["spec"]["schedulerName"] = "default-scheduler"
    assert kept(other)
    other["status"]["phase"] = "Succeeded"
    assert not kept(other)  # ended: holds nothing
    unbound = pod("elsewhere")
    unbound["spec"]["schedulerName"] = "default-scheduler"
    assert not kept(unbound)


def test_outside_sums_the_live_bound_pods_allot_did_not_place():
    daemon = pod("daemon", node="n1")
    daemon["spec"]["schedulerName"] = "default-scheduler"
    placed = pod("adopted", node="n1")
    placed["metadata"]["labels"] = {"allot.io/project": "p", "allot.io/job": "j"}
    assert external.outside([daemon, placed, pod("waiting")]) == {"n1": (1, 1000, 2**30)}


def test_a_device_a_live_pod_of_another_job_holds_is_not_given_again(agent, cluster):
    """Issue 40: the second job's pod is never made; its start waits, naming the holder."""
    agent.start(job("first"))
    observed(agent, cluster, ("team-a", "first"))
    agent.start(job("second"))  # the same node and device
    assert (NS, "second-0") not in cluster.pods
    status = agent.observe().jobs[("team-a", "second")]
    assert status.phase == "ContainerCreating"
    assert "dgx1-1 device 0 is held by pod allot-team-a/first-0 of job team-a/first" in (
        status.message)  # fmt: skip
    agent.stop("team-a", "first")
    cluster.pods.pop((NS, "first-0"), None)
    agent.watcher.pods.pop((NS, "first-0"), None)
    agent._retries.clear(("team-a", "second"))
    agent.observe()
    assert (NS, "second-0") in cluster.pods


def test_a_start_waiting_for_a_held_device_is_tried_every_second_not_after_doubling_waits(
    agent, cluster, clock
):
    """Issue 40: the holder is going (deleted, or its job evicted), so the start comes back at
    an even pace; a back-off doubling to 60 s left the fault tier's jobs Pending past a minute
    after a worker kill."""
    agent.start(job("first"))
    observed(agent, cluster, ("team-a", "first"))
    agent.start(job("second"))  # the same node and device
    key = ("team-a", "second")
    for _ in range(6):  # 1, 2, 4, 8, 16, 32 s with the doubling back-off
        assert agent._retries._deferred[key].retry_at - clock() == 1.0
        clock.now += 1.0
        agent.observe()  # the owed start is tried again, and refused again
    assert (NS, "second-0") not in cluster.pods


def test_a_claimant_starts_once_its_victim_goes_and_other_starts_wait_for_no_victim(
    agent, cluster, monkeypatch
):
    """Issue 39: in the pass that deletes a victim's pod, a start on a free device is not held
    up by the victim still terminating, and the claimant of its device is bound as soon as the
    watch shows it gone (before, every start waited for every victim of the pass)."""
    monkeypatch.setattr(agent_module, "VACATE_WAIT_S", 60.0)
    agent.start(job("victim"))
    observed(agent, cluster, ("team-a", "victim"))
    cluster.terminating.add("victim-0")
    starts = [job("claimant"), job("free", devices=(1,))]  # the victim's device; another
    carrying = threading.Thread(target=agent.carry_out, args=([("team-a", "victim")], starts))
    carrying.start()
    try:
        assert _within(10, lambda: (NS, "free-0") in cluster.pods), "the free start waited"
        assert (NS, "victim-0") in cluster.pods  # terminating: it holds device 0
        assert (NS, "claimant-0") not in cluster.pods  # never two live pods on one device
    finally:
        cluster.finish_deleting(NS, "victim-0")
    carrying.join(timeout=30)
    assert not carrying.is_alive(), "the claimant waited for the deadline, not for the victim"
    assert (NS, "claimant-0") in cluster.pods


def _within(timeout_s: float, check) -> bool:
    """Whether `check()` comes true within `timeout_s` (polled)."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_fractions_of_one_device_may_share_it():
    held = adopt.holders([pod("f", annotations={"allot.io/node": "n", "allot.io/devices": "2",
                                                "allot.io/share": "0.5"})])  # fmt: skip
    half = JobSpec("p", "j", (PodSpec("n", (2,), 0.5),), NOW)
    whole = JobSpec("p", "k", (PodSpec("n", (2,)),), NOW)
    assert adopt.holder(half, held) == ""
    assert "n device 2 is held by pod team-x/f" in adopt.holder(whole, held)


def test_a_gang_whose_bind_fails_is_left_with_no_pod_bound_and_none_labelled(agent, cluster):
    """All or none: the pod bound before the failure is deleted (its owner makes a new one),
    the one labelled but not bound is unlabelled, and the start is tried again later."""
    from agents.base import ExternalRef

    cluster.namespaces["team-x"] = {"metadata": {"name": "team-x"}}
    for name in ("w-0", "w-1"):
        made = pod(name)
        made["spec"]["nodeName"] = None
        with cluster.cond:
            cluster.create("/api/v1/namespaces/team-x/pods", made)
    cluster.fail_binding = {"w-1"}
    ref = ExternalRef("team-x", "Job", "w", "uid-w")
    spec = JobSpec("p", "gang", (PodSpec("dgx1-1", (0,)), PodSpec("dgx1-2", (0,))), NOW,
                   external=ref)  # fmt: skip
    members = [cluster.pods[("team-x", name)] for name in ("w-0", "w-1")]
    try:
        adopt.start(agent.api, spec, [dict(m, status={"phase": "Pending"}) for m in members])
    except Exception as exc:
        assert "500" in str(exc)
    else:
        raise AssertionError("the failed bind was not raised")
    assert ("team-x", "w-0") not in cluster.pods  # bound, then deleted
    left = cluster.pods[("team-x", "w-1")]
    assert not left["spec"].get("nodeName")
    assert "allot.io/job" not in left["metadata"]["labels"]
    assert "allot.io/node" not in left["metadata"]["annotations"]


@pytest.mark.parametrize(
    "error",
    [
        ApiException(status=500, reason="etcd is having a bad day"),
        ConnectionRefusedError("the API server went away"),
    ],
)
def test_an_owner_the_api_fails_to_give_leaves_the_view_unsynced_not_raised(agent, cluster, error):
    """A 500 (or a lost connection) reading an owner: the cycle's view is partial (synced
    False), the portal decides nothing on it, and observe does not fail."""
    cluster.namespaces["team-x"] = {"metadata": {"name": "team-x"}}
    made = pod("w-0", owner("Job", "w"))
    made["spec"]["nodeName"] = None
    with cluster.cond:
        cluster.create("/api/v1/namespaces/team-x/pods", made)

    def failing(namespace, ref):
        raise error

    agent._owners.get = failing
    observed_view = agent.observe()
    assert agent.watcher.wait_for(cluster.rv)
    seen = agent.observe()
    assert not seen.synced and seen.workloads == ()
    agent._owners.get = lambda namespace, ref: None  # the owner is gone: the pod stands alone
    agent._retry_at = float("-inf")  # the outage is over
    seen = agent.observe()
    assert seen.synced and [w.ref.kind for w in seen.workloads] == ["Pod"]
    assert observed_view.nodes


def test_an_adopted_jobs_logs_are_read_from_its_first_pod_in_the_workloads_namespace(
    agent, cluster
):
    from agents.base import ExternalRef

    cluster.namespaces["team-x"] = {"metadata": {"name": "team-x"}}
    for index, name in enumerate(("w-b", "w-a")):
        made = pod(name, containers=[{"name": "work", "image": "busybox"}])
        made["metadata"]["labels"] = {"allot.io/project": "p", "allot.io/job": "j",
                                      "allot.io/pod-index": str(index)}  # fmt: skip
        with cluster.cond:
            cluster.create("/api/v1/namespaces/team-x/pods", made)
        cluster.set_pod_status("team-x", name, "Running", running=True)
    cluster.logs[("team-x", "w-b")] = ["epoch 1", "epoch 2"]
    spec = JobSpec("p", "j", (PodSpec("dgx1-1", (0,)), PodSpec("dgx1-2", (0,))), NOW,
                   external=ExternalRef("team-x", "Job", "w", "uid-w"))  # fmt: skip
    assert agent.logs(spec) == ["epoch 1", "epoch 2"]
    assert agent.status(spec).pods[0].index == 0 and len(agent.status(spec).pods) == 2


def test_a_pod_labelled_with_another_projects_job_neither_fails_it_nor_hides_its_gpus(
    agent, cluster
):
    """Labels anyone may set: a Failed pod in another namespace naming team-a/train does not
    fail that job, and a bound pod naming it still counts on its node."""
    agent.start(job("train"))
    cluster.set_pod_status(NS, "train-0", "Running", running=True)
    cluster.namespaces["evil"] = {"metadata": {"name": "evil"}}
    for name, node, phase in (("fake", "", "Failed"), ("hidden", "dgx1-2", "Running")):
        made = pod(name, containers=[{"name": "c", "image": "busybox", "resources": {
            "limits": {"nvidia.com/gpu": "2"}}}])  # fmt: skip
        made["metadata"]["labels"] = {"allot.io/project": "team-a", "allot.io/job": "train"}
        made["spec"]["schedulerName"] = "default-scheduler"
        made["spec"]["nodeName"] = node or None
        with cluster.cond:
            cluster.create("/api/v1/namespaces/evil/pods", made)
        cluster.set_pod_status("evil", name, phase, running=phase == "Running")
    seen = observed(agent, cluster)
    assert seen.phase == "Running" and len(seen.pods) == 1
    nodes = {n.name: n for n in agent.observe().nodes}
    assert nodes["dgx1-2"].outside_gpus == 2 and nodes["dgx1-1"].outside_gpus == 0


# ---------------------------------------------------------------------- eviction by suspension
class FakeBatch:
    """BatchV1Api's Job calls `adopt.suspend` and `adopt.resume` make, on a dict of Jobs."""

    def __init__(self, *jobs):
        self.jobs = {j["metadata"]["name"]: j for j in jobs}
        self.patches: list[tuple[str, dict]] = []
        self.listed: list[str] = []  # pod label selectors

    def _model(self, body):
        return model(body, client.V1Job)

    def read_namespaced_job(self, name, namespace, **_):
        if name not in self.jobs:
            raise ApiException(status=404)
        return self._model(self.jobs[name])

    def patch_namespaced_job(self, name, namespace, body, **_):
        self.patches.append((name, body))

    def list_namespaced_pod(self, namespace, label_selector, **_):
        self.listed.append(label_selector)
        return client.V1PodList(items=[])

    def list_job_for_all_namespaces(self, label_selector, **_):
        return client.V1JobList(
            items=[
                self._model(j)
                for j in self.jobs.values()
                if label_selector in j["metadata"].get("labels", {})
            ]
        )


class _Answer:
    def __init__(self, body: dict):
        self.data = json.dumps(body)


def model(body: dict, kind):
    """`body` as the client's model `kind`, as it deserializes an API answer."""
    return client.ApiClient().deserialize(_Answer(body), kind)


def v1pods(*dicts):
    return [model(d, client.V1Pod) for d in dicts]


def batch_job(name: str, parent: dict | None = None, **status) -> dict:
    made = owner("Job", name, parent=parent, spec={"suspend": False, "template": {}})
    made["metadata"]["namespace"] = "team-x"
    made["status"] = status
    return made


@pytest.fixture
def fake_batch(monkeypatch):
    made: list[FakeBatch] = []

    def use(*jobs) -> FakeBatch:
        made.append(FakeBatch(*jobs))
        monkeypatch.setattr(adopt.client, "BatchV1Api", lambda api: made[-1])
        monkeypatch.setattr(adopt.client, "CoreV1Api", lambda api: made[-1])
        return made[-1]

    return use


def test_a_jobs_pods_are_evicted_by_suspending_the_job_and_labelling_it(fake_batch):
    train = batch_job("train")
    batch = fake_batch(train)
    found = v1pods(pod("train-a", train, node="n1"), pod("train-b", train))
    assert adopt.suspend(None, "team-x", found, "p/train")
    ((name, patch),) = batch.patches
    assert name == "train" and patch["spec"] == {"suspend": True}
    assert patch["metadata"]["labels"] == {adopt.EVICTING: "true"}


@pytest.mark.parametrize("case", ["jobset", "finished", "replicaset", "two-jobs", "gone"])
def test_pods_the_job_controller_would_not_take_away_are_deleted_instead(fake_batch, case):
    """A JobSet's Job (its controller resumes it), a finished Job (its controller deletes
    nothing), pods of a ReplicaSet or of two Jobs, a Job gone: not suspended."""
    jobset = owner("JobSet", "set", api="jobset.x-k8s.io/v1alpha2")
    train = batch_job("train", parent=jobset if case == "jobset" else None)
    if case == "finished":
        train["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    other = owner("ReplicaSet", "rs", api="apps/v1") if case == "replicaset" else batch_job("b")
    batch = fake_batch(*([] if case == "gone" else [train]))
    second = other if case in ("replicaset", "two-jobs") else train
    found = v1pods(pod("a", train, node="n1"), pod("b", second, node="n1"))
    assert not adopt.suspend(None, "team-x", found, "p/train")
    assert batch.patches == []


def test_a_suspended_job_is_resumed_once_its_controller_took_its_pods_away(fake_batch):
    labels = {adopt.EVICTING: "true"}
    going = batch_job("going", active=2, conditions=[{"type": "Suspended", "status": "True"}])
    unseen = batch_job("unseen")  # the controller has not seen the suspension yet
    gone = batch_job("gone", conditions=[{"type": "Suspended", "status": "True"}])
    for made in (going, unseen, gone):
        made["metadata"]["labels"] = labels
        made["spec"]["suspend"] = True
    batch = fake_batch(going, unseen, gone)
    assert adopt.resume(None) == 2  # still waiting: going, unseen
    ((name, patch),) = batch.patches
    assert name == "gone" and patch["spec"] == {"suspend": False}
    assert batch.listed == ["batch.kubernetes.io/controller-uid=uid-Job-gone,allot.io/job"]
    assert patch["metadata"]["labels"] == {adopt.EVICTING: None}
