"""Stop, resume and delete in Chromium (issue 23): a researcher stops a running job - it shows
Stopped with its events and logs; resumes it - it runs again as run 2; deletes it after
confirming - its page is a 404."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
WAIT_MS = 15_000


def until_status(page, status: str) -> None:
    """Reload the job page until its badge says `status` (the embedded cycle runs every 0.5 s).
    The logs' poll may change the badge alone (logs.js), so a badge already saying it is
    followed by a reload: the runs table and the events are drawn by the server."""
    for _ in range(30):
        if page.locator("#job-status").inner_text() == status:
            page.reload()
            if page.locator("#job-status").inner_text() == status:
                return
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator("#job-status")).to_have_text(status)


def test_a_researcher_stops_resumes_and_deletes_a_job(page, server, member, nodes, artifacts):
    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/new/")
    page.get_by_label("Project").select_option("team-a")
    page.get_by_label("Name").fill("train-7")
    page.get_by_label("GPUs per pod").fill("1")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(server.url + "/jobs/team-a/train-7/")
    until_status(page, "Running")
    expect(page.locator("#logs")).to_contain_text("started on", timeout=WAIT_MS)

    page.get_by_role("button", name="Stop").click()
    page.wait_for_url(server.url + "/jobs/team-a/train-7/")
    expect(page.locator("#job-status")).to_have_text("Stopped")
    expect(page.locator(".messages")).to_contain_text("stopped; resume it to run it again")
    expect(page.locator("#events")).to_contain_text("stopped by bob while Running")
    expect(page.locator('#runs tr[data-run="1"]')).to_contain_text("stopped by bob")
    expect(page.locator("#logs")).to_contain_text("started on", timeout=WAIT_MS)  # run 1's, kept
    expect(page.get_by_role("button", name="Stop")).to_have_count(0)
    page.screenshot(path=artifacts / "job-stopped.png", full_page=True)

    page.get_by_role("button", name="Resume").click()
    page.wait_for_url(server.url + "/jobs/team-a/train-7/")
    until_status(page, "Running")
    expect(page.locator('#runs tr[data-run="2"]')).to_contain_text("running")
    expect(page.locator("#logs-title")).to_contain_text("Logs of run 2")
    expect(page.locator("#events")).to_contain_text("resumed by bob")
    page.screenshot(path=artifacts / "job-resumed-run-2.png", full_page=True)

    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
    page.get_by_role("button", name="Delete").click()
    page.wait_for_url(server.url + "/jobs/")
    assert asked and re.search(r"Delete job team-a/train-7\? It is running", asked[0])
    expect(page.locator(".messages")).to_contain_text("Job team-a/train-7 deleted.")
    expect(page.locator("#jobs-count")).to_contain_text("0 jobs")
    answer = page.goto(server.url + "/jobs/team-a/train-7/")
    assert answer.status == 404
    page.screenshot(path=artifacts / "job-deleted-404.png", full_page=True)
