"""One spelling per quantity kind on every page (issue 34 item 11), in Chromium: a 20Gi
GPU-memory request on 32 GiB devices (a share of 0.625, stored as 0.63) is "0.63" everywhere on
its page and the overview, never 0.62 or 0.625; GPU-hours have two decimals ("0.00", not "0.0");
a fraction's device tile shows the device's index; a failed GPU is not counted in service."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_gpu_memory_request_reads_the_same_everywhere(page, server, member, team_a,
                                                         artifacts):  # fmt: skip
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default",
                        failed_devices=[7])  # fmt: skip
    submit_job(member, team_a, name="by-memory", gpus=0.63, gpu_memory_bytes=20 * 2**30)
    deadline = time.monotonic() + 20
    while Job.objects.get(name="by-memory").status != Status.RUNNING:
        assert time.monotonic() < deadline, "by-memory did not start"
        time.sleep(0.3)
    job = Job.objects.get(name="by-memory")
    device = job.placement[0]["devices"][0]

    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/team-a/by-memory/")
    facts = page.locator("dl").inner_text()
    assert "0.63" in facts and "0.625" not in facts and "0.62 " not in facts
    expect(page.locator("dl")).to_contain_text(f"dgx1-1 GPU {device} (0.63)")
    expect(page.locator("#service-held")).to_contain_text("0.00 GPU-h")
    page.screenshot(path=artifacts / "one-spelling-job.png", full_page=True)

    page.goto(server.url + "/")
    expect(page.locator('[data-tile="gpus"] .value')).to_have_text("7")  # GPU 7 failed
    expect(page.locator('[data-tile="gpus"] .sub')).to_contain_text("1 failed")
    tile = page.locator(f'article[data-node="dgx1-1"] .device >> nth={device}')
    expect(tile).to_have_text(str(device))  # its index, not "0.63"
    expect(page.locator('[data-tile="allocated"] .value')).to_have_text("0.63")
    body = page.locator("main").inner_text()
    assert not re.search(r"\b0\.62(5)?\b", body), body
    page.screenshot(path=artifacts / "one-spelling-overview.png", full_page=True)
