"""Issue 34 item 12 in Chromium: after an admin marks a GPU failed, the job that held it takes its
other device back and reclaims what it lacks in the same cycle (F1-F3, scheduler/actions/failed.py).
Before, an over-quota job of another project started on the freed device and was evicted by the
reclaim a few seconds later ("nlp reclaims its fair share")."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import HOLDING, Job, JobEvent, Status
from portal.jobs.services import submit_job
from tests.browser.conftest import sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def devices(job: Job) -> tuple[int, ...] | None:
    job.refresh_from_db()
    if job.status not in HOLDING:
        return None
    return tuple(d for pod in job.placed_pods for d in pod.devices)


def test_a_failed_gpu_lends_its_jobs_other_device_to_no_one(page, server, cluster_admin, team_a,
                                                             team_b, artifacts):  # fmt: skip
    Node.objects.create(name="dgx1-1", gpus=4, pool="default")
    team_a.quota, team_b.quota = 2, 1  # 3 GPUs once one fails: team-b lends one over quota
    team_a.save(update_fields=["quota"])
    team_b.save(update_fields=["quota"])
    train = submit_job(cluster_admin, team_a, name="train", gpus=2)
    held = wait_for(lambda: devices(train))
    fills = [submit_job(cluster_admin, team_b, name=f"fill-{i}", gpus=1) for i in range(1, 5)]
    wait_for(lambda: sum(devices(job) is not None for job in fills) == 2)
    failed_at = timezone.now()
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/nodes/")
    row = page.locator('tr[data-node="dgx1-1"]')
    row.get_by_label("GPU index of dgx1-1").fill(str(held[0]))
    row.get_by_role("button", name="Mark failed").click()
    expect(page.locator(".messages")).to_contain_text(f"GPU {held[0]} of dgx1-1 marked failed")
    moved = wait_for(lambda: (found := devices(train)) and held[0] not in found and found, 20)
    assert held[1] in moved  # its healthy device stayed its own
    time.sleep(3)  # a few more cycles: nothing started for the failure is taken back
    after = JobEvent.objects.filter(time__gte=failed_at, project=team_b).order_by("time")
    kinds = [(event.job_name, event.kind) for event in after]
    assert [kind for kind in kinds if kind[1] == "scheduled"] == [], kinds
    assert len([kind for kind in kinds if kind[1] == "evicted"]) == 1, kinds
    assert Job.objects.get(pk=train.pk).status in (Status.CONTAINER_CREATING, Status.RUNNING)
    page.goto(server.url + "/jobs/team-a/train/")
    expect(page.locator("body")).to_contain_text(f"moved: GPU {held[0]} of dgx1-1 failed")
    page.screenshot(path=artifacts / "failed-gpu-no-churn.png", full_page=True)
