"""The accounting page in Chromium (issue 23): for the scripted week of runs, a cluster admin
reaches it from the navigation and sees a plotly graph of the GPU-hours per day and the table
with the right totals per project, user and department; a researcher sees only their team's;
the "Download CSV" link gives the same figures; a bad date is said under the form."""

from __future__ import annotations

import csv
import io

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in
from tests.portal.dashboards.accounting_week import (
    ALLOCATED,
    BY_USER,
    OVER_QUOTA,
    PASSWORD,
    UNTIL,
    make_week,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def figures(page) -> dict[str, tuple[str, str]]:
    """{group: (allocated, over quota)} as the table shows them."""
    rows = page.locator("#accounting-table tbody tr")
    return {
        row.locator("th").inner_text(): (row.locator("td.allocated").inner_text(),
                                         row.locator("td.over").inner_text())
        for row in rows.all()
    }  # fmt: skip


def test_the_page_draws_the_week_and_lists_the_right_totals(page, server, artifacts):
    make_week()
    assert PASSWORD
    sign_in(page, server, "root")
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Accounting").click()
    page.wait_for_url(server.url + "/accounting/")
    page.get_by_label("Since").fill("2026-11-16")
    page.get_by_label("Until").fill(UNTIL)
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(lambda url: "since=2026-11-16" in url)  # the new page, not the old
    chart = page.locator("#accounting-chart")
    expect(chart.locator(".main-svg").first).to_be_visible()
    expect(chart.locator("g.trace.bars")).to_have_count(3)  # one trace per project
    expect(chart.locator("g.xtick")).to_have_count(7)  # Monday to Sunday
    shown = figures(page)
    assert shown == {name: (f"{ALLOCATED[name]:.2f}", f"{OVER_QUOTA[name]:.2f}")
                     for name in ALLOCATED}  # fmt: skip
    expect(page.locator("#accounting-total td.allocated")).to_have_text(
        f"{sum(ALLOCATED.values()):.2f}"
    )
    expect(page.locator("#accounting-table tbody td.used").first).to_have_text("not measured")
    page.screenshot(path=artifacts / "accounting-projects.png", full_page=True)

    page.get_by_label("Group by").select_option("user")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(lambda url: "group_by=user" in url)
    expect(chart.locator("g.trace.bars")).to_have_count(4)
    assert {k: v[0] for k, v in figures(page).items()} == {
        name: f"{hours:.2f}" for name, hours in BY_USER.items()
    }
    page.screenshot(path=artifacts / "accounting-users.png", full_page=True)
    with page.expect_download() as download:  # the API's CSV, streamed by daphne (ASGI)
        page.get_by_role("link", name="Download CSV").click()
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    assert {r["user"]: float(r["allocated_gpu_hours"]) for r in rows
            if r["period"] == "total"} == BY_USER  # fmt: skip

    page.get_by_label("Group by").select_option("department")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(lambda url: "group_by=department" in url)
    assert {k: v[0] for k, v in figures(page).items()} == {
        "physics": f"{ALLOCATED['team-a'] + ALLOCATED['team-b']:.2f}", "(no department)": "0.50"
    }  # fmt: skip

    page.get_by_label("Since").fill("last tuesday")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#err_since")).to_contain_text("must be a date")
    expect(page.locator("#accounting-chart")).to_have_count(0)


def test_a_researcher_sees_only_their_team(page, server, artifacts):
    make_week()
    sign_in(page, server, "bob")
    page.goto(f"{server.url}/accounting/?since=2026-11-16&until={UNTIL}&group_by=user")
    expect(page.locator("#accounting-chart .main-svg").first).to_be_visible()
    assert {k: v[0] for k, v in figures(page).items()} == {
        "alice": f"{BY_USER['alice']:.2f}", "bob": f"{BY_USER['bob']:.2f}"
    }  # fmt: skip
    options = page.get_by_label("Project").locator("option").all_inner_texts()
    assert options == ["all", "team-a"]
    page.screenshot(path=artifacts / "accounting-researcher.png", full_page=True)
