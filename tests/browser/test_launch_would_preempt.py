"""Launching Jupyter says first which running jobs it would preempt, and asks (issue 34 item
2), in Chromium: alice's notebook of 2 GPUs in team-a would evict bob's training job `a-job4`,
which runs over team-a's quota on the only node. The form names it with the scheduler's reason
from a dry run of the next cycle; nothing is launched until she confirms."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_launch_form_names_the_job_it_would_preempt_and_asks(
    page, server, owner, member, team_a, artifacts
):
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default")
    submit_job(member, team_a, name="a-job4", gpus=8)
    deadline = time.monotonic() + 20  # the server's own cycle starts it
    while Job.objects.get(name="a-job4").status != Status.RUNNING:
        assert time.monotonic() < deadline, "a-job4 did not start"
        time.sleep(0.3)

    sign_in(page, server, "alice")
    page.goto(server.url + "/jupyter/new/")
    page.get_by_label("GPUs").fill("2")
    page.get_by_role("button", name="Launch Jupyter").click()
    warning = page.locator("#would-preempt")
    expect(warning).to_contain_text("Launching now would stop 1 running job")
    expect(warning).to_contain_text("team-a/a-job4 (bob, 8 GPUs)")
    expect(warning).to_contain_text("has higher priority (100 > 50)")
    page.screenshot(path=artifacts / "launch-would-preempt.png", full_page=True)
    assert not Job.objects.filter(type="interactive").exists()  # asked, not launched
    assert Job.objects.get(name="a-job4").status == Status.RUNNING

    page.get_by_role("button", name="Launch and stop 1 job").click()
    page.wait_for_url(server.url + "/jobs/team-a/jupyter-alice/")
    assert Job.objects.filter(name="jupyter-alice", type="interactive").exists()
