"""The submit form in Chromium: a researcher gives an estimated run time as "90m", gets the
field's own error for "soon", and the job page shows the estimate as the predicted run time
once the background refresh has run (Step 7)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.browser,
    pytest.mark.eta_interval(1),
]


def test_a_researcher_submits_a_job_with_an_estimated_run_time(
    page, server, member, nodes, artifacts
):
    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/new/")
    page.get_by_label("Project").select_option("team-a")
    page.get_by_label("Name").fill("sweep-7")
    page.get_by_label("GPUs per pod").fill("1")
    page.get_by_label("Estimated run time").fill("soon")
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#err_estimate_s")).to_contain_text("must be a duration such as 90m")
    expect(page.get_by_label("Estimated run time")).to_have_value("soon")  # kept to correct
    page.screenshot(path=artifacts / "submit-form-estimate-error.png", full_page=True)

    page.get_by_label("Estimated run time").fill("90m")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(server.url + "/jobs/team-a/sweep-7/")
    expect(page.locator("dl")).to_contain_text("Your estimate")
    expect(page.locator("dl")).to_contain_text("1 h 30 min")
    # the prediction is written by the background refresh after a cycle: reload until it shows
    for _ in range(20):
        if "(your estimate)" in page.locator("dl").inner_text():
            break
        page.wait_for_timeout(500)
        page.reload()
    expect(page.locator("dl")).to_contain_text("Predicted run time")
    expect(page.locator("dl")).to_contain_text("(your estimate)")
    page.screenshot(path=artifacts / "job-with-estimate.png", full_page=True)
