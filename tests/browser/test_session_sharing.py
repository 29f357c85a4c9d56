"""Issue 32 item 3 in Chromium: bob's notebook is his alone; he shares it with rita from the job
page, she opens it, he ends the share and she no longer can; the page shows who may open it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import launch_lab, sign_in
from tests.conftest import _user

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]


def test_the_owner_shares_a_notebook_from_its_page_and_ends_the_share(
    page, server, member, team_a, nodes, artifacts
):
    _user("rita", project=team_a, role="researcher")
    launch_lab(page, server, "bob")
    lab = page.url

    other = page.context.browser.new_context()
    rita = other.new_page()
    sign_in(rita, server, "rita")
    rita.goto(server.url + "/jobs/team-a/jupyter-bob/")
    expect(rita.locator("#open-session")).to_have_count(0)  # not hers, not shared
    assert rita.goto(lab).status == 403

    page.goto(server.url + "/jobs/team-a/jupyter-bob/")
    expect(page.locator("#no-grants")).to_have_text("Nobody else may open it.")
    page.get_by_label("Share with").select_option("rita")
    page.get_by_role("button", name="Share", exact=True).click()
    expect(page.locator("#sharing li")).to_contain_text("Shared with rita by bob")
    page.screenshot(path=artifacts / "notebook-shared.png", full_page=True)

    rita.goto(server.url + "/jobs/team-a/jupyter-bob/")
    rita.locator("#open-session").click()
    rita.wait_for_url("**/sessions/team-a/jupyter-bob/lab**")
    rita.locator("#jupyter-config-data").wait_for(state="attached", timeout=30_000)

    page.get_by_role("button", name="End share").click()
    expect(page.locator("#no-grants")).to_be_visible()
    assert rita.goto(lab).status == 403
    other.close()
