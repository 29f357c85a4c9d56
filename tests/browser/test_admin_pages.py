"""Issue 24 item 6: a quota beyond the cluster is saved with a warning; time limits are typed as
90m, 2h, 1d; a cluster admin deactivates, promotes and deletes users from the Users page (not
themselves); checkboxes sit on the line of their labels."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from playwright.sync_api import expect

from portal.tenancy.models import Project
from tests.browser.conftest import PASSWORD, USER_MODE, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE


def test_a_quota_beyond_the_cluster_saves_with_a_warning_and_times_take_units(
    page, server, cluster_admin, team_a, nodes, artifacts
):
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/projects/team-a/edit/")
    page.get_by_label("GPU quota").fill("100")
    page.get_by_label("Interactive time limit").fill("90m")
    page.get_by_label("Training maximum run time").fill("1d")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(server.url + "/projects/team-a/")
    warnings = page.locator(".messages li.warning")
    expect(warnings.first).to_have_text("team-a's quota of 100 GPUs is more than the cluster's "
                                        "16 GPUs: it can never be met.")  # fmt: skip
    expect(warnings.nth(1)).to_contain_text("Quotas add up to 100 GPUs, more than the cluster's 16")
    page.screenshot(path=artifacts / "quota-warning.png", full_page=True)
    team_a.refresh_from_db()
    assert (team_a.interactive_time_limit_s, team_a.training_max_runtime_s) == (5400, 86400)
    page.goto(server.url + "/projects/team-a/edit/")
    expect(page.get_by_label("Interactive time limit")).to_have_value("90m")
    page.get_by_label("Interactive time limit").fill("soon")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#err_interactive_time_limit_s")).to_have_text(
        "must be a duration such as 90m, 2h or 1d, not 'soon'"
    )
    page.goto(server.url + "/projects/")
    expect(page.locator(".warn-banner").first).to_contain_text("it can never be met")
    Project.objects.filter(name="team-a").update(quota=4)


def _row(page, username: str):
    return page.locator(f'#users-table tr[data-user="{username}"]')


def test_an_admin_deactivates_promotes_and_deletes_users_but_not_themselves(
    page, server, cluster_admin, member, viewer, artifacts
):
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/users/")
    own = _row(page, cluster_admin.username).get_by_role("button", name="Deactivate")
    expect(own).to_be_disabled()
    expect(_row(page, cluster_admin.username).locator(".disabled-action")).to_have_attribute(
        "title",
        "Your own account: another cluster admin changes it, so nobody locks themselves out.",
    )
    _row(page, "bob").get_by_role("button", name="Deactivate").click()
    expect(page.locator(".messages")).to_contain_text("bob deactivated")
    expect(_row(page, "bob")).to_contain_text("deactivated")
    _row(page, "vera").get_by_role("button", name="Make admin").click()
    expect(_row(page, "vera").get_by_role("button", name="Remove admin")).to_be_visible()
    page.screenshot(path=artifacts / "users-actions.png", full_page=True)
    users = get_user_model().objects
    assert not users.get(username="bob").is_active and users.get(username="vera").is_staff

    assert _one_line(page, "Cluster admin")

    page.once("dialog", lambda dialog: dialog.accept())
    _row(page, "vera").get_by_role("button", name="Delete").click()
    expect(page.locator(".messages")).to_contain_text("User vera deleted")
    assert not users.filter(username="vera").exists()

    page.get_by_role("button", name="Sign out").click()  # bob, deactivated, cannot sign in
    page.goto(server.url + "/login/")
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".error")).to_be_visible()
    assert page.url.startswith(server.url + "/login/")


def test_the_checkboxes_on_my_page_sit_beside_their_labels(page, server, member):
    sign_in(page, server, "bob")
    page.goto(server.url + "/me/")
    for name in ("by email", "in the browser, on the overview"):
        assert _one_line(page, name), name


def _one_line(page, name: str) -> bool:
    """The checkbox is its own size and shares one line with its label's words."""
    box = page.get_by_role("checkbox", name=name)
    label = page.locator("label", has=box).bounding_box()
    return box.bounding_box()["width"] < 40 and label["height"] < 30
