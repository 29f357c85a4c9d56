"""Workloads other tools made, scheduled by Allot: the portal's side (issue 33).

The agent here is the simulated cluster with pods "made by other tools" added the way the
Kubernetes agent reports them (`Observation.workloads`); the same flows on a real API server are
in tests/k8s/test_external_on_lab.py. What is checked: a row per group under its namespace's
project, the gang placed all or nothing under quota, reclaim evicts and the owner's new pods
wait again, the owner's deletion ends the row, the waiting reason is told to the cluster, a
namespace no project owns is told so, and every bound pod Allot did not place takes its room.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.base import ExternalPod, ExternalRef, JobSpec, NodeStatus, Workload
from agents.simulated import SimulatedAgent
from portal.cluster.models import Node, PoolTopology
from portal.jobs.models import HOLDING, Job, JobEvent, Status
from portal.jobs.services import delete_job, stop_job
from portal.scheduling import external
from portal.scheduling.cycle import run_cycle
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


class OtherTools(SimulatedAgent):
    """The simulated cluster plus pods that kubectl, a Job controller or a Deployment made."""

    def __init__(self, clock):
        super().__init__(start_delay_s=0, clock=clock)
        self.workloads: dict[str, Workload] = {}
        self.explained: dict[str, str] = {}
        self.outside: dict[str, int] = {}  # node -> GPUs bound by another scheduler
        self.refs: dict[tuple[str, str], ExternalRef] = {}

    def apply(self, namespace, kind, owner, size=1, gpus=1.0, **fields) -> Workload:
        pods = tuple(ExternalPod(f"{owner}-{i}") for i in range(size))
        ref = ExternalRef(namespace, kind, owner, f"uid-{owner}")
        workload = Workload(ref, size, pods, datetime.now(UTC), gpus=gpus, **fields)
        self.workloads[ref.uid] = workload
        return workload

    def delete_owner(self, owner: str) -> None:
        self.workloads.pop(f"uid-{owner}")

    def observe(self):
        seen = super().observe()
        nodes = tuple(NodeStatus(name, gpus=8, outside_gpus=held)
                      for name, held in self.outside.items())  # fmt: skip
        return dataclasses.replace(seen, workloads=tuple(self.workloads.values()),
                                   nodes=nodes or seen.nodes)  # fmt: skip

    def start(self, job: JobSpec) -> None:
        if job.external is not None:  # bind the unbound pods where the plan says
            workload = self.workloads[job.external.uid]
            pairs = zip(workload.pods, job.placement, strict=False)
            bound = tuple(
                dataclasses.replace(pod, node=at.node, phase="Running") for pod, at in pairs
            )
            self.workloads[job.external.uid] = dataclasses.replace(workload, pods=bound)
            self.refs[job.key] = job.external
        super().start(job)

    def stop(self, project: str, name: str) -> None:
        ref = self.refs.pop((project, name), None)
        if ref is not None and ref.uid in self.workloads:  # evicted: the owner makes new pods
            workload = self.workloads[ref.uid]
            fresh = tuple(ExternalPod(f"{pod.name}-new") for pod in workload.pods)
            self.workloads[ref.uid] = dataclasses.replace(workload, pods=fresh)
        super().stop(project, name)

    def explain(self, waiting) -> None:
        self.explained.update(waiting)


@pytest.fixture
def agent(clock) -> OtherTools:
    return OtherTools(clock)


def cycles(agent, count=3):
    for _ in range(count):
        run_cycle(agent, wait=True)


def test_a_job_of_another_tool_becomes_a_row_of_its_namespaces_project_and_runs(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    agent.apply("allot-team-a", "Job", "train-resnet", size=4, gpus=1.0, cpu_millis=2000)
    cycles(agent)
    job = cluster.job("team-a", "train-resnet")
    assert job.is_external and job.external_kind == "Job" and job.pods == 4
    assert job.external_namespace == "allot-team-a" and job.cpu_millis == 2000
    assert job.status in HOLDING and len(job.placement) == 4
    assert all(pod.node == "n1" for pod in agent.workloads["uid-train-resnet"].pods)
    first = JobEvent.objects.filter(job=job).order_by("id").first()
    assert "Job train-resnet in namespace allot-team-a asks Allot" in first.message


def test_r23_a_gang_annotated_for_kai_runs_in_one_rack_and_an_unannotated_one_gets_the_default(
    cluster, agent
):
    """Issue 38: the annotation's level (a label key) becomes the row's constraint and the cycle
    honours it; a gang without one gets its project's default, as a submitted job does."""
    rack = "example.com/rack"
    for i in range(4):
        cluster.node(f"n{i}", 1)
    for i in range(4):
        Node.objects.filter(name=f"n{i}").update(labels={rack: f"r{i // 2}"})
    PoolTopology.objects.create(pool="default", levels=[rack])
    cluster.project("team-a", 4)
    cluster.submit("team-a", "mine", gpus=1)
    cycles(agent, 2)
    assert cluster.job("team-a", "mine").nodes == ["n0"]
    agent.apply("allot-team-a", "PyTorchJob", "ddp", size=2, gpus=1.0, topology_required=rack)
    cycles(agent)
    ddp = cluster.job("team-a", "ddp")
    assert ddp.topology == {"required": rack}
    assert ddp.status in HOLDING and sorted(ddp.nodes) == ["n2", "n3"]
    Project.objects.filter(name="team-a").update(default_topology_preferred="rack")
    agent.apply("allot-team-a", "Job", "plain", size=2, gpus=1.0)
    agent.apply("allot-team-a", "Pod", "solo", size=1, gpus=1.0)
    cycles(agent)
    assert cluster.job("team-a", "plain").topology == {"preferred": "rack"}
    assert cluster.job("team-a", "solo").topology == {}


def test_r6_1_a_gang_of_another_tool_is_placed_all_or_nothing(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "mine", gpus=5)
    cycles(agent, 2)
    agent.apply("allot-team-a", "Job", "gang", size=4, gpus=1.0)
    cycles(agent)
    gang = cluster.job("team-a", "gang")
    assert gang.status == Status.PENDING and not any(
        pod.node for pod in agent.workloads["uid-gang"].pods
    )
    assert "gang" in agent.explained["uid-gang"] or "waits" in agent.explained["uid-gang"]
    assert agent.explained["uid-gang"].startswith("team-a/gang waits: ")
    cluster.delete("team-a", "mine")
    cycles(agent)
    assert cluster.job("team-a", "gang").status in HOLDING


def test_a_namespace_no_project_owns_is_told_so_and_gets_no_row(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    agent.apply("research", "Pod", "lonely")
    cycles(agent)
    assert not Job.objects.filter(external_uid="uid-lonely").exists()
    assert "namespace research belongs to no Allot project" in agent.explained["uid-lonely"]
    project = cluster.project("team-b", 2, namespaces=["research"])  # an admin maps it
    cycles(agent)
    assert Job.objects.get(external_uid="uid-lonely").project == project


def test_r9_reclaim_evicts_an_external_borrower_and_its_new_pods_wait_again(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 2)
    cluster.project("team-b", 6)
    agent.apply("allot-team-a", "Job", "borrow", size=8, gpus=1.0)
    cycles(agent)
    assert cluster.job("team-a", "borrow").status in HOLDING  # over quota: team-b is idle
    cluster.submit("team-b", "mine", gpus=6)
    cycles(agent, 4)
    assert cluster.job("team-b", "mine").status in HOLDING
    borrow = cluster.job("team-a", "borrow")
    assert borrow.status == Status.PENDING  # its owner made new pods; they wait for Allot
    assert not any(pod.node for pod in agent.workloads["uid-borrow"].pods)
    assert agent.explained["uid-borrow"].startswith("team-a/borrow waits: ")


def test_the_owner_deleting_the_workload_ends_its_row_after_a_grace(cluster, agent, monkeypatch):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    agent.apply("allot-team-a", "Deployment", "serve-abc12", gpus=1.0)
    cycles(agent)
    assert cluster.job("team-a", "serve-abc12-0").status in HOLDING  # a Deployment's pod: its own
    agent.delete_owner("serve-abc12")
    monkeypatch.setattr(external, "GONE_GRACE_S", 0.0)
    cycles(agent, 2)
    assert not Job.objects.filter(external_uid="uid-serve-abc12").exists()
    event = JobEvent.objects.filter(job_name="serve-abc12-0", kind="deleted").get()
    assert "by its owner (Deployment serve-abc12 is gone)" in event.message


def test_a_vanishing_moment_within_the_grace_keeps_the_row(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    workload = agent.apply("allot-team-a", "Job", "blink", gpus=1.0)
    cycles(agent)
    agent.delete_owner("blink")
    cycles(agent, 1)
    agent.workloads[workload.ref.uid] = workload  # the Job controller made its pod again
    cycles(agent, 1)
    assert Job.objects.filter(external_uid="uid-blink").count() == 1


def test_a_person_stops_but_does_not_delete_a_live_external_workload(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    agent.apply("allot-team-a", "Job", "held", gpus=1.0)
    cycles(agent)
    job = cluster.job("team-a", "held")
    with pytest.raises(Exception) as refused:
        delete_job(job)
    assert "its owner deletes it (kubectl delete job held -n allot-team-a)" in str(
        refused.value.detail
    )
    stop_job(job)
    cycles(agent)
    assert cluster.job("team-a", "held").status == Status.STOPPED
    assert not any(pod.node for pod in agent.workloads["uid-held"].pods)  # evicted, not rebound
    assert "is stopped in Allot" in agent.explained["uid-held"]
    assert Job.objects.filter(external_uid="uid-held").count() == 1  # no second row


def test_r2_6_gpus_bound_by_another_scheduler_take_their_room(cluster, agent):
    """The lab's case: all 16 GPUs held by pods another scheduler bound; Allot started two more
    jobs (18 on 16). Now it starts nothing there and says why."""
    for name in ("n1", "n2"):
        cluster.node(name, 8)
    agent.outside.update({"n1": 8, "n2": 8})
    cluster.project("team-a", 16)
    cluster.submit("team-a", "one", gpus=1)
    cycles(agent)
    assert Node.objects.get(name="n1").outside_gpus == 8
    one = cluster.job("team-a", "one")
    assert one.status == Status.PENDING
    assert one.pending_reason == (
        "no node in the cluster has 1 GPU idle (R5.3); 16 GPUs there are held by pods outside "
        "Allot (R2.6)"
    )
    agent.outside["n2"] = 6
    cycles(agent)
    assert cluster.job("team-a", "one").nodes == ["n2"]


def test_a_workload_that_requests_nothing_is_told_why_it_is_not_scheduled(cluster, agent):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    agent.apply("allot-team-a", "Pod", "empty", gpus=0.0)
    cycles(agent)
    assert not Job.objects.filter(external_uid="uid-empty").exists()
    assert "request no GPU, CPU or memory" in agent.explained["uid-empty"]


def test_a_cycle_that_sees_no_external_workload_reads_no_project(cluster, agent):
    """Issue 39: `sync` reads every project (for their namespaces) only when the cluster holds
    a workload of another tool; a cluster of Allot's own jobs costs it one query, for the
    external rows that may have ended."""
    for i in range(5):
        Project.objects.create(name=f"idle-{i}", quota=1)
    table = Project._meta.db_table
    with CaptureQueriesContext(connection) as quiet:
        external.sync(agent.observe())
    assert len(quiet.captured_queries) == 1
    assert not any(table in query["sql"] for query in quiet.captured_queries)
    agent.apply("allot-idle-0", "Job", "train")
    with CaptureQueriesContext(connection) as busy:
        external.sync(agent.observe())
    assert any(table in query["sql"] for query in busy.captured_queries)
    assert Job.objects.get(project__name="idle-0").external_uid == "uid-train"
