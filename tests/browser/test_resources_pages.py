"""Issue 26 in Chromium: a cluster admin marks a GPU failed on the Nodes page and its job leaves
it within a cycle (the device drawn as failed), then marks it healthy; a researcher submits a job
with CPU and memory on the form, and a bad CPU quantity is said under its field."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import HOLDING, Job, Status
from portal.jobs.services import submit_job
from scheduler.quantity import GIB
from tests.browser.conftest import sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def placed(job: Job) -> tuple[str, int] | None:
    job.refresh_from_db()
    if job.status not in HOLDING:
        return None
    (pod,) = job.placed_pods
    return pod.node, pod.devices[0]


def test_an_admin_marks_a_gpu_failed_and_its_job_leaves_it(page, server, cluster_admin, team_a,
                                                           artifacts):  # fmt: skip
    Node.objects.create(name="dgx1-1", gpus=2, cpu_millis=16000, memory_bytes=128 * GIB)
    job = submit_job(cluster_admin, team_a, name="train-1", gpus=1, cpu_millis=4000)
    node, device = wait_for(lambda: placed(job))
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/nodes/")
    row = page.locator('tr[data-node="dgx1-1"]')
    expect(row.locator("[data-cpu]")).to_have_text("4 cores / 16 cores")
    row.get_by_label("GPU index of dgx1-1").fill(str(device))
    row.get_by_role("button", name="Mark failed").click()
    expect(page.locator(".messages")).to_contain_text(f"GPU {device} of dgx1-1 marked failed")
    expect(page.locator(f'tr[data-node="dgx1-1"] .device[data-device="{device}"]')).to_have_class(
        "device failed"
    )
    moved = wait_for(lambda: (placed(job) or (None, device))[1] != device and placed(job))
    assert moved == (node, 1 - device)
    messages = list(job.events.values_list("message", flat=True))
    assert any(f"GPU {device} of dgx1-1 failed" in message for message in messages), messages
    page.goto(server.url + "/")  # the overview draws it failed, CPU and memory beside GPUs
    node_box = page.locator('.node[data-node="dgx1-1"]')
    expect(node_box.locator(".cpu-memory")).to_have_text(
        "CPU 4 cores / 16 cores, memory 0 GiB / 128 GiB"
    )
    expect(node_box.locator(".device").nth(device)).to_have_class("device failed")
    expect(page.locator('#projects tr[data-project="team-a"] .cpu-memory')).to_have_text(
        "4 cores, 0 GiB"
    )
    page.screenshot(path=artifacts / "overview-failed-gpu.png", full_page=True)
    page.goto(server.url + "/nodes/")
    page.screenshot(path=artifacts / "node-failed-gpu.png", full_page=True)
    row = page.locator('tr[data-node="dgx1-1"]')
    row.get_by_label("GPU index of dgx1-1").fill(str(device))
    row.get_by_role("button", name="Mark healthy").click()
    expect(page.locator(".messages")).to_contain_text(f"GPU {device} of dgx1-1 marked healthy")
    assert Node.objects.get(name="dgx1-1").failed_devices == []


def test_a_researcher_asks_for_cpu_and_memory_on_the_form(page, server, member, nodes, artifacts):
    sign_in(page, server, member.username)
    page.goto(server.url + "/jobs/new/")
    page.get_by_label("Name").fill("loader")
    page.get_by_label("CPU per pod").fill("-1")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#err_cpu")).to_have_text(
        "'-1' is not a CPU quantity (cores, e.g. 2 or 500m)"
    )
    page.screenshot(path=artifacts / "submit-form-cpu-error.png", full_page=True)
    page.get_by_label("CPU per pod").fill("500m")
    page.get_by_label("Memory per pod", exact=True).fill("16Gi")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(server.url + "/jobs/team-a/loader/")
    job = Job.objects.get(name="loader")
    assert (job.cpu_millis, job.memory_bytes) == (500, 16 * GIB)
    assert job.status in (Status.PENDING, *HOLDING)
