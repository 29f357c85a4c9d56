"""A job that can never start under its project's limit is accepted with a warning on the page
that names the limit (issue 34 item 6), in Chromium: 20 cores in a project limited to 16."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.jobs.models import Job
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_job_above_the_projects_cpu_limit_is_warned_about_at_submit(
    page, server, member, team_a, nodes, artifacts
):
    team_a.cpu_limit_millis = 16000
    team_a.save()
    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/new/")
    page.get_by_label("Name").fill("too-wide")
    page.get_by_label("CPU per pod", exact=True).fill("20")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(server.url + "/jobs/team-a/too-wide/")
    warning = page.locator(".messages li.warning")
    expect(warning).to_contain_text("too-wide: never starts as submitted")
    expect(warning).to_contain_text("team-a's CPU limit of 16 cores")
    expect(warning).to_contain_text("20 cores requested")
    assert Job.objects.get(name="too-wide").status == "Pending"  # accepted, kept pending
    # the expected start says the same at once, not "at the next scheduling cycle"
    expect(page.locator("dl")).to_contain_text("cannot start: would exceed team-a's CPU limit")
    page.screenshot(path=artifacts / "submit-beyond-cpu-limit.png", full_page=True)
