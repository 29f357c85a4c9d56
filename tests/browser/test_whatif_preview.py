"""The what-if preview (issue 37) in Chromium: on the nodes page a cluster admin clicks
"Preview drain" and sees the job the drain would stop, the table of start moves and the chart
of GPUs per project; on the project form, "Preview" does the same for the quota entered.
Nothing is changed."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from tests.browser.conftest import sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_preview_a_drain_and_a_quota_shows_the_table_and_chart(
    page, server, cluster_admin, member, team_a, team_b, outsider, artifacts
):
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default")
    submit_job(member, team_a, name="a-run", gpus=8)
    wait_for(lambda: Job.objects.get(name="a-run").status == Status.RUNNING, 30)  # its cycle
    submit_job(outsider, team_b, name="b-wait", gpus=4)

    sign_in(page, server, "root")
    page.goto(server.url + "/nodes/")
    page.get_by_role("button", name="Preview drain").click()
    box = page.locator("#whatif")
    expect(box.locator("#whatif-preempted")).to_contain_text("team-a/a-run: stopped: its node "
                                                             "dgx1-1 is drained")  # fmt: skip
    expect(box.locator("#whatif-table tr[data-project='team-a'] td").nth(1)).to_have_text("1")
    expect(box.locator("#whatif-chart .main-svg").first).to_be_visible()
    page.screenshot(path=artifacts / "whatif-drain.png", full_page=True)
    assert Node.objects.get(name="dgx1-1").schedulable

    page.goto(server.url + "/projects/team-b/edit/")
    page.get_by_label("GPU quota").fill("6")
    page.get_by_role("button", name="Preview", exact=True).click()
    expect(page.locator("#whatif-table tr[data-project='team-b'] td").nth(3)).to_have_text("now")
    expect(page.locator("#whatif-preempted")).to_contain_text("team-a/a-run")
    expect(page.locator("#whatif-chart .main-svg").first).to_be_visible()
    page.screenshot(path=artifacts / "whatif-quota.png", full_page=True)
    assert Job.objects.get(name="a-run").status == Status.RUNNING
