"""The accounting page in Chromium shows core-hours and memory GiB-hours beside GPU-hours when
runs held CPU or memory (issue 26), and keeps its GPU columns alone when none did."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in
from tests.portal.dashboards.accounting_week import UNTIL
from tests.portal.dashboards.test_accounting_cpu_memory import (
    CORE_HOURS,
    GIB_HOURS,
    with_cpu_and_memory,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def column(page, css: str) -> dict[str, str]:
    rows = page.locator("#accounting-table tbody tr")
    return {row.locator("th").inner_text(): row.locator(css).inner_text() for row in rows.all()}


def test_the_totals_show_core_and_gib_hours(page, server, artifacts):
    with_cpu_and_memory()
    sign_in(page, server, "root")
    page.goto(f"{server.url}/accounting/?since=2026-11-16&until={UNTIL}")
    headers = page.locator("#accounting-table thead th")
    expect(headers.nth(7)).to_have_text("Core-h")
    expect(headers.nth(8)).to_have_text("Memory GiB-h")
    expect(page.locator("p.help")).to_contain_text("CPU-only runs included")
    assert column(page, "td.cores") == {name: f"{h:.2f}" for name, h in CORE_HOURS.items()}
    assert column(page, "td.memory") == {name: f"{h:.2f}" for name, h in GIB_HOURS.items()}
    expect(page.locator("#accounting-total td.cores")).to_have_text(
        f"{sum(CORE_HOURS.values()):.2f}"
    )
    expect(page.locator("#accounting-total td.memory")).to_have_text(
        f"{sum(GIB_HOURS.values()):.2f}"
    )
    page.locator("#accounting-table").scroll_into_view_if_needed()
    page.screenshot(path=artifacts / "accounting-cpu-memory.png", full_page=True)

    page.goto(f"{server.url}/accounting/?since=2026-11-16&until={UNTIL}&project=team-b")
    expect(page.locator("#accounting-table thead th")).to_have_count(7)  # none held: GPU only
    expect(page.locator("#accounting-table td.cores")).to_have_count(0)
