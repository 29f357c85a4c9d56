"""Per-user limits in Chromium (issue 36): a project admin sets the project default with the
form (a negative GPU limit refused naming the field); a researcher reads the limits in force for
them, their second job waits with the reason naming the limit while the first runs, and a third
past the pending limit is refused on the job form saying so."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.jobs.models import Job, Status
from tests.browser.conftest import sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
LOADED_S = 60  # the embedded cycle runs every 0.5 s; a loaded 2-core machine may lag far more


def submit(page, server, name: str) -> None:
    page.goto(server.url + "/jobs/new/")
    page.get_by_label("Project").select_option("team-a")
    page.get_by_label("Name").fill(name)
    page.get_by_label("GPUs per pod").fill("1")
    page.get_by_role("button", name="Submit").click()


def job(name: str) -> Job | None:
    return Job.objects.filter(project__name="team-a", name=name).first()


def test_an_admin_sets_limits_and_a_researcher_is_held_to_them(
    page, server, artifacts, owner, member, nodes
):
    sign_in(page, server, owner.username)
    page.goto(server.url + "/projects/team-a/")
    page.get_by_role("link", name="Set a limit").click()
    expect(page.get_by_label("For")).to_have_value("")  # the project default
    page.get_by_label("GPUs held at once").fill("-1")
    page.get_by_label("Pending jobs").fill("1")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#err_max_gpus")).to_contain_text("greater than or equal to 0")
    page.screenshot(path=artifacts / "user-limit-form-error.png", full_page=True)
    page.get_by_label("GPUs held at once").fill("1")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(server.url + "/projects/team-a/")
    row = page.locator("#user-limits tr[data-user-limit='*']")
    expect(row).to_contain_text("Every user (default)")
    page.context.clear_cookies()

    sign_in(page, server, member.username)
    page.goto(server.url + "/projects/team-a/")
    expect(page.locator("#my-limits")).to_have_text("Your limits here: 1 GPU held, 1 pending job")
    page.locator("#per-user-limits").screenshot(path=artifacts / "user-limit-project-page.png")
    submit(page, server, "b-1")
    page.wait_for_url(server.url + "/jobs/team-a/b-1/")
    wait_for(lambda: job("b-1").status == Status.RUNNING, LOADED_S)
    submit(page, server, "b-2")
    page.wait_for_url(server.url + "/jobs/team-a/b-2/")
    wait_for(lambda: "per-user GPU limit" in job("b-2").pending_reason, LOADED_S)
    page.reload()
    expect(page.locator("body")).to_contain_text(
        "bob's per-user GPU limit of 1 GPU in team-a: 1 GPU in use + 1 GPU requested (R21.1)"
    )
    page.screenshot(path=artifacts / "user-limit-job-waits.png", full_page=True)
    submit(page, server, "b-3")
    expect(page.locator("[role=alert]")).to_contain_text(
        "at most 1 may wait per user in team-a (its per-user limit max_pending)"
    )
    page.screenshot(path=artifacts / "user-limit-submit-refused.png", full_page=True)
    assert job("b-3") is None
