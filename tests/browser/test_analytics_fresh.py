"""Analytics on a fresh install, and one colour per project on every chart (issue 34 item 10),
in Chromium: with no data the page says so instead of drawing empty axes; once a job runs, the
24-hour range is drawn from the first sample, not as a sliver at its right end; and a project
has the same colour on Analytics and Accounting (it was blue on one and orange on the other)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from portal.tenancy.models import Membership, Project
from portal.web.colours import PALETTE
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_fresh_install_says_it_has_no_data_yet(page, server, cluster_admin, artifacts):
    sign_in(page, server, "root")
    page.goto(server.url + "/analytics/")
    expect(page.locator("#no-data")).to_be_visible()
    expect(page.locator("#no-data")).to_contain_text("No data in this range yet")
    expect(page.locator("#allocation-chart")).to_be_hidden()
    expect(page.locator("#status")).to_have_text("no data yet")
    page.screenshot(path=artifacts / "analytics-fresh-install.png", full_page=True)


def test_a_project_has_one_colour_and_the_range_starts_at_the_data(
    page, server, member, team_a, artifacts
):
    # vision was created after team-a but is listed first nowhere; team-a is the 1st project
    vision = Project.objects.create(name="vision", quota=2)
    Membership.objects.create(user=member, project=vision, role="researcher")
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default")
    submit_job(member, vision, name="v-job", gpus=2)
    deadline = time.monotonic() + 20
    while Job.objects.get(name="v-job").status != Status.RUNNING:
        assert time.monotonic() < deadline, "v-job did not start"
        time.sleep(0.3)
    time.sleep(3)  # a few usage samples (one a second here)

    sign_in(page, server, "bob")
    page.goto(server.url + "/analytics/")
    expect(page.locator("#status")).to_contain_text("data since")
    expect(page.locator("#status")).not_to_contain_text("one point per 5 min")  # drawn finer
    colours = page.evaluate("""() => Object.fromEntries(document.getElementById('allocation-chart')
        .data.filter((t) => !t.name.endsWith(' quota')).map((t) => [t.name, t.line.color]))""")
    assert colours["vision"] == PALETTE[1]  # the 2nd project made, wherever it is listed
    start = page.evaluate("() => document.getElementById('allocation-chart')._fullLayout"
                          ".xaxis.range[0]")  # fmt: skip
    begins = datetime.fromisoformat(str(start).replace(" ", "T")).replace(tzinfo=UTC)
    assert datetime.now(UTC) - begins < timedelta(minutes=30), start  # not 24 h ago
    page.screenshot(path=artifacts / "analytics-first-data.png", full_page=True)

    page.goto(server.url + "/accounting/?group_by=project&period=day")
    bars = page.evaluate("""() => Object.fromEntries(document.getElementById('accounting-chart')
        .data.map((t) => [t.name, t.marker.color]))""")
    assert bars["vision"] == colours["vision"], bars
    page.screenshot(path=artifacts / "accounting-same-colours.png", full_page=True)
