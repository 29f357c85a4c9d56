"""Issue 23 in Chromium: the overview's running and pending tables show how many rows there are
and page through them, 25 at a time, instead of a fixed-height scroll box hiding most rows."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.jobs import services
from portal.jobs.models import Job
from tests.browser.conftest import USER_MODE, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE
DASH = "\N{EN DASH}"  # "Rows 1-25 of 30" as the page prints it


def test_the_overview_pages_through_running_and_pending_jobs(
    page, server, member, nodes, artifacts
):
    team_a = member.memberships.get().project
    for i in range(30):  # a quarter GPU each: all of them fit the two nodes
        services.submit_job(member, team_a, name=f"small-{i:02}", type="train", gpus=0.25)
    for i in range(27):  # larger than the cluster's room: they wait
        services.submit_job(member, team_a, name=f"wide-{i:02}", type="train", gpus=8, pods=3)
    for _ in range(60):
        if Job.objects.filter(status="Running").count() == 30:
            break
        page.wait_for_timeout(500)
    sign_in(page, server, "bob")

    running, pending = page.locator("#running-pager"), page.locator("#pending-pager")
    expect(page.locator("#running-count")).to_have_text("(30)")
    expect(running.locator(".range")).to_have_text(f"Rows 1{DASH}25 of 30")
    expect(page.locator("#running tbody tr")).to_have_count(25)
    expect(running.locator(".prev")).to_be_disabled()
    running.locator(".next").click()
    expect(running.locator(".range")).to_have_text(f"Rows 26{DASH}30 of 30")
    expect(page.locator("#running tbody tr")).to_have_count(5)
    expect(running.locator(".next")).to_be_disabled()

    expect(pending.locator(".range")).to_have_text(f"Rows 1{DASH}25 of 27")
    pending.locator(".next").click()
    expect(page.locator("#pending tbody tr")).to_have_count(2)
    page.wait_for_timeout(2500)  # live updates arrive meanwhile: the pages shown stay put
    expect(running.locator(".range")).to_have_text(f"Rows 26{DASH}30 of 30")
    expect(pending.locator(".range")).to_have_text(f"Rows 26{DASH}27 of 27")
    page.screenshot(path=artifacts / "overview-paging.png", full_page=True)
    pending.locator(".prev").click()
    expect(page.locator("#pending tbody tr")).to_have_count(25)


def test_a_short_list_has_no_pager(page, server, member, nodes):
    services.submit_job(member, member.memberships.get().project, name="one", type="train", gpus=1)
    sign_in(page, server, "bob")
    expect(page.locator("#running-pager")).to_be_hidden()
    expect(page.locator("#pending-pager")).to_be_hidden()
