"""Issue 26 through the portal's cycle on PostgreSQL: CPU and memory requests are placed on the
nodes' allocatable (a job larger than every node waits with a reason naming cores), and a GPU
marked failed - over the API or on the node page - takes no new pod and its job is moved off it
within one cycle, with an event naming the GPU. The Kubernetes inventory's failed devices and
allocatable reach the same rows."""

from __future__ import annotations

import pytest
from django.test import Client

from agents.base import NodeStatus
from portal.cluster.models import Node
from portal.cluster.sync import sync_nodes
from portal.jobs.models import HOLDING, JobEvent, Status
from portal.scheduling import snapshot
from portal.tenancy.models import Department
from scheduler.quantity import GIB, MIB

pytestmark = pytest.mark.django_db


def test_the_snapshot_carries_cpu_memory_failed_devices_and_limits(cluster):
    Node.objects.create(name="n1", gpus=8, cpu_millis=64000, memory_bytes=512 * GIB,
                        failed_devices=[3], failed_in_cluster=[7])  # fmt: skip
    cluster.project("team-a", 4, cpu_limit_millis=32000, memory_limit_bytes=64 * GIB)
    cluster.submit("team-a", "j", gpus=1, cpu_millis=4000, memory_bytes=16 * GIB)
    state = snapshot.load()
    (node,), (project,), (job,) = state.nodes, state.projects, state.jobs
    assert (node.cpu_millis, node.memory_bytes, node.failed_devices) == (64000, 512 * GIB, (3, 7))
    assert (project.cpu_limit_millis, project.memory_limit_bytes) == (32000, 64 * GIB)
    assert (job.cpu_millis, job.memory_bytes, job.gpu_memory_bytes) == (4000, 16 * GIB, None)


def test_a_job_asking_more_cpu_than_any_node_waits_with_a_reason_naming_cores(cluster, api,
                                                                              member):  # fmt: skip
    for name in ("dgx1-1", "dgx1-2"):
        Node.objects.create(name=name, gpus=8, cpu_millis=16000, memory_bytes=64 * GIB)
    cluster.project("team-b", 4)  # the member's project is the conftest's team-a
    body = {"project": "team-a", "name": "wide", "gpus": 1, "cpu": "64"}
    response = api(member).post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    assert "64 cores" in str(response.json()["warnings"])
    cluster.cycle()
    job = cluster.job("team-a", "wide")
    assert job.status == Status.PENDING
    assert "cores" in job.pending_reason and "16" in job.pending_reason, job.pending_reason
    reason = api(member).get("/api/v1/jobs/team-a/wide/").json()["pending_reason"]
    assert "cores" in reason


def test_cpu_decides_the_node_when_gpus_fit_on_both(cluster):
    Node.objects.create(name="small", gpus=8, cpu_millis=4000)
    Node.objects.create(name="large", gpus=8, cpu_millis=64000)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "loader-heavy", gpus=1, cpu_millis=32000)
    cluster.cycle()
    job = cluster.job("team-a", "loader-heavy")
    assert job.status in HOLDING and job.nodes == ["large"]


def test_a_cpu_only_job_runs_and_holds_no_gpu(cluster):
    Node.objects.create(name="n1", gpus=2, cpu_millis=8000)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "prep", gpus=0, cpu_millis=4000)
    cluster.cycle()
    job = cluster.job("team-a", "prep")
    assert job.status in HOLDING and job.nodes == ["n1"]
    assert job.allocated_gpus == 0 and all(not pod.devices for pod in job.placed_pods)
    submitted = JobEvent.objects.get(job=job, kind="submitted").message
    assert submitted == "submitted by someone: 0 GPU, 4 cores, train"


def placed_device(job) -> tuple[str, int]:
    (pod,) = job.placed_pods
    (device,) = pod.devices
    return pod.node, device


def test_a_device_failed_over_the_api_moves_its_job_within_one_cycle(cluster, api,
                                                                     cluster_admin):  # fmt: skip
    Node.objects.create(name="n1", gpus=2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "train-1", gpus=1)
    cluster.cycle()
    node, device = placed_device(cluster.job("team-a", "train-1"))
    response = api(cluster_admin).patch(f"/api/v1/nodes/{node}/",
                                        {"failed_devices": [device]}, format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    assert response.json()["devices"][device]["failed"] is True
    cluster.cycle()  # one cycle: the job is moved off the failed GPU to the healthy one (F1)
    job = cluster.job("team-a", "train-1")
    assert job.status in HOLDING and placed_device(job) == (node, 1 - device)
    events = list(JobEvent.objects.filter(job=job).values_list("kind", "message"))
    assert (
        "moved", f"moved to {node}: GPU {device} of {node} failed (R2.6) \N{EM DASH} on {node} "
        f"GPU {1 - device}") in events, events  # fmt: skip


def test_a_device_failed_on_the_node_page_takes_no_new_pod(cluster, cluster_admin):
    Node.objects.create(name="n1", gpus=1)
    cluster.project("team-a", 1)
    browser = Client()
    browser.force_login(cluster_admin)
    response = browser.post("/nodes/n1/", {"action": "fail", "device": "0"}, follow=True)
    assert "GPU 0 of n1 marked failed" in response.content.decode()
    assert Node.objects.get(name="n1").failed_devices == [0]
    cluster.submit("team-a", "waits", gpus=1)
    cluster.cycle()
    assert cluster.job("team-a", "waits").status == Status.PENDING
    browser.post("/nodes/n1/", {"action": "heal", "device": "0"})
    assert Node.objects.get(name="n1").failed_devices == []
    cluster.cycle()
    assert cluster.job("team-a", "waits").status in HOLDING


def test_a_device_the_node_does_not_have_is_refused_on_the_page_and_the_api(
    cluster, api, cluster_admin
):
    Node.objects.create(name="n1", gpus=2)
    response = api(cluster_admin).patch("/api/v1/nodes/n1/", {"failed_devices": [5]},
                                        format="json")  # fmt: skip
    assert response.status_code == 400
    assert "device 5 does not exist" in str(response.json()["failed_devices"])
    browser = Client()
    browser.force_login(cluster_admin)
    page = browser.post("/nodes/n1/", {"action": "fail", "device": "x"}, follow=True)
    assert "whole number" in page.content.decode()
    assert Node.objects.get(name="n1").failed_devices == []


def test_a_researcher_cannot_mark_a_device_failed(api, member, nodes):
    response = api(member).patch("/api/v1/nodes/dgx1-1/", {"failed_devices": [0]}, format="json")
    assert response.status_code == 403
    browser = Client()
    browser.force_login(member)
    assert browser.post("/nodes/dgx1-1/", {"action": "fail", "device": "0"}).status_code == 403


def test_the_inventory_sets_allocatable_and_the_clusters_failed_devices_not_the_admins(db):
    Node.objects.create(name="dgx1-1", gpus=8, failed_devices=[1])
    seen = NodeStatus(name="dgx1-1", gpus=8, cpu_millis=63500, memory_bytes=500000 * MIB,
                      failed_devices=(6, 7))  # fmt: skip
    assert sync_nodes((seen,))
    row = Node.objects.get(name="dgx1-1")
    assert (row.cpu_millis, row.memory_bytes) == (63500, 500000 * MIB)
    assert (row.failed_devices, row.failed_in_cluster) == ([1], [6, 7])
    assert row.out_of_service == [1, 6, 7]
    assert not sync_nodes((seen,))  # nothing changed the second time


def test_a_departments_cpu_limit_leaves_a_job_pending_naming_the_department_and_cores(
    cluster, cluster_admin
):
    Node.objects.create(name="n1", gpus=8, cpu_millis=64000, memory_bytes=512 * GIB)
    dept = Department.objects.create(name="dept-d", quota=8, cpu_limit_millis=8000,
                                     memory_limit_bytes=64 * GIB)  # fmt: skip
    cluster.project("team-p1", 4, department=dept, cpu_limit_millis=6000)
    cluster.project("team-p2", 4, department=dept)
    cluster.submit("team-p1", "p1-1", gpus=1, cpu_millis=4000)
    cluster.submit("team-p2", "p2-1", gpus=1, cpu_millis=3000)
    cluster.submit("team-p2", "p2-2", gpus=1, cpu_millis=2000)
    cluster.cycle()
    departments = {d.name: d for d in snapshot.load().departments}
    assert (departments["dept-d"].cpu_limit_millis, departments["dept-d"].memory_limit_bytes) == (
        8000, 64 * GIB)  # fmt: skip
    assert cluster.job("team-p2", "p2-1").status in HOLDING
    job = cluster.job("team-p2", "p2-2")
    assert job.status == Status.PENDING
    assert job.pending_reason == (
        "over limit: would exceed dept-d's CPU limit of 8 cores: 7 cores in use + 2 cores "
        "requested (R3.1)"
    )
    client = Client()
    client.force_login(cluster_admin)
    row = client.get("/departments/").content.decode()
    assert "7 cores / 8 cores" in row and "0 GiB / 64 GiB" in row, row
    cluster.delete("team-p1", "p1-1")
    cluster.cycle()
    assert cluster.job("team-p2", "p2-2").status in HOLDING


def test_a_departments_memory_limit_names_memory(cluster):
    Node.objects.create(name="n1", gpus=8, memory_bytes=512 * GIB)
    dept = Department.objects.create(name="dept-d", quota=8, memory_limit_bytes=64 * GIB)
    cluster.project("team-p1", 8, department=dept, memory_limit_bytes=128 * GIB)
    cluster.submit("team-p1", "big", gpus=1, memory_bytes=48 * GIB)
    cluster.submit("team-p1", "more", gpus=1, memory_bytes=32 * GIB)
    cluster.cycle()
    assert cluster.job("team-p1", "big").status in HOLDING
    assert "dept-d's memory limit of 64 GiB: 48 GiB in use + 32 GiB requested" in (
        cluster.job("team-p1", "more").pending_reason
    )
