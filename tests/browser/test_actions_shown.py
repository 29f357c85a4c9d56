"""Issue 24 items 5 and 7: an action shows only to those who may use it, a disabled one says why
on hover; a second "Launch Jupyter" without a name gets a free name."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.jobs import services
from portal.jobs.models import Job
from tests.browser.conftest import USER_MODE, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE


def _running(page, url: str) -> None:
    for _ in range(40):
        page.goto(url)
        if page.locator("#job-status").inner_text() == "Running":
            return
        page.wait_for_timeout(500)
    pytest.fail(f"{url} never ran")


def test_a_viewer_gets_no_submit_form_no_jupyter_and_no_extend(
    page, server, member, viewer, nodes, artifacts
):
    team_a = member.memberships.get().project
    services.submit_job(member, team_a, name="nb", type="interactive", gpus=0.5, ports=[8888])
    sign_in(page, server, "vera")
    page.goto(server.url + "/jobs/")
    submit = page.get_by_role("button", name="Submit a job")
    expect(submit).to_be_disabled()
    expect(submit).to_have_attribute("title", "Only researchers and admins submit jobs; "
                                              "you are viewer in team-a.")  # fmt: skip
    expect(page.get_by_role("link", name="Launch Jupyter")).to_have_count(0)
    page.screenshot(path=artifacts / "viewer-jobs.png", full_page=True)
    response = page.goto(server.url + "/jobs/new/")
    assert response.status == 403
    expect(page.locator("#error-message")).to_contain_text("you are viewer in team-a")
    _running(page, server.url + "/jobs/team-a/nb/")
    expect(page.locator("#open-session")).to_have_count(0)
    expect(page.locator("#extend-job")).to_have_count(0)
    page.screenshot(path=artifacts / "viewer-job.png", full_page=True)


def test_extend_shows_only_where_the_project_allows_it_and_says_why_once_used(
    page, server, member, nodes, artifacts
):
    team_a = member.memberships.get().project
    services.submit_job(member, team_a, name="train-1", type="train", gpus=1)
    sign_in(page, server, "bob")
    _running(page, server.url + "/jobs/team-a/train-1/")
    expect(page.locator("#extend-job")).to_have_count(0)  # team-a allows no extension

    team_a.timeout_extension_s = 3600
    team_a.save(update_fields=["timeout_extension_s"])
    page.reload()
    page.get_by_role("button", name="Extend once").click()
    expect(page.locator(".messages")).to_contain_text("extended")
    extend = page.locator("#extend-job")
    expect(extend).to_be_disabled()
    expect(extend).to_have_attribute("title", "Extended once already (by 3600 s); a job is "
                                              "extended only once.")  # fmt: skip
    page.screenshot(path=artifacts / "extended-job.png", full_page=True)


def test_a_second_jupyter_without_a_name_gets_a_free_one(page, server, member, nodes):
    sign_in(page, server, "bob")
    for expected in ("jupyter-bob", "jupyter-bob-2"):
        page.goto(server.url + "/jupyter/new/")
        page.get_by_role("button", name="Launch Jupyter").click()
        page.wait_for_url(f"{server.url}/jobs/team-a/{expected}/")
    assert set(Job.objects.values_list("name", flat=True)) == {"jupyter-bob", "jupyter-bob-2"}
