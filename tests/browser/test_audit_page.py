"""The audit log's page in Chromium: a cluster admin cordons a node, finds it in /audit/ with who,
address and before -> after, filters by action and downloads the same rows as CSV; a researcher
has no link to the page and gets 403 there (issue 22)."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_cluster_admin_reads_filters_and_downloads_the_log(
    page, server, cluster_admin, member, nodes, artifacts
):
    page.goto(server.url + "/login/")  # a wrong password first: it is in the log too
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Password").fill("not-the-password")
    page.get_by_role("button", name="Sign in").click()
    sign_in(page, server, "bob")
    expect(page.get_by_role("navigation", name="Main")).not_to_contain_text("Audit")
    assert page.goto(server.url + "/audit/").status == 403
    page.context.clear_cookies()

    sign_in(page, server, "root")
    page.goto(server.url + "/nodes/")
    page.locator("tr", has_text="dgx1-1").get_by_role("button", name="Cordon").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit").click()
    page.wait_for_url(server.url + "/audit/")
    table = page.locator("#audit-table")
    cordon = table.locator("tr[data-action='node.changed']")
    expect(cordon).to_have_count(1)
    expect(cordon).to_contain_text("root")
    expect(cordon).to_contain_text("127.0.0.1")
    expect(cordon).to_contain_text("node dgx1-1")
    expect(cordon).to_contain_text("schedulable: True → False")
    expect(table.locator("tr[data-action='auth.login_failed']")).to_contain_text("bob")
    expect(table.locator("tr[data-action='auth.login']")).to_have_count(2)
    page.screenshot(path=artifacts / "audit-log.png", full_page=True)

    page.get_by_label("Action").fill("auth.")
    page.get_by_role("button", name="Filter").click()
    expect(table.locator("tbody tr")).to_have_count(3)
    expect(table.locator("tr[data-action='node.changed']")).to_have_count(0)
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    rows = list(csv.reader(io.StringIO(download.value.path().read_text())))
    assert [row[3] for row in rows[1:]] == ["auth.login", "auth.login", "auth.login_failed"]
    assert [row[1] for row in rows[1:]] == ["root", "bob", "bob"]

    page.get_by_label("Since").fill("yesterday-ish")
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#err_since")).to_contain_text("must be an ISO 8601 time or date")
    page.screenshot(path=artifacts / "audit-log-bad-filter.png", full_page=True)
