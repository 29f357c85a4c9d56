"""The portal's pages work under its Content-Security-Policy (issue 22 item 9).

Each page is loaded in Chromium with the TR-4858 cluster busy (§4.8): the overview (its plotly
chart and its websocket), the nodes (GPU bars), analytics (two plotly charts), a form, the
Swagger UI of the API and Django's admin. The policy is in every page's header, and the browser
reports no violation of it (`securitypolicyviolation` events) and writes nothing to the console.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.tenancy.services import issue_token
from tests.browser.conftest import sign_in
from tests.browser.test_dashboards import SCENARIO, replay, run_step

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

# Installed before any page script runs; the page's own policy does not apply to it.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => window.__violations.push(
  `${event.violatedDirective} blocked ${event.blockedURI || "inline"}` +
  ` (${event.sourceFile}:${event.lineNumber})`));
"""

PAGES = {  # path -> what shows that the page's scripts ran
    "/": "#project-chart .main-svg",
    "/nodes/": '.device .fill[style*="height"]',
    "/analytics/": "#allocation-chart .main-svg",
    "/jobs/new/": "form button[type=submit]",
    "/api/docs/": ".swagger-ui .opblock",
    "/admin/": "#content",
}


@pytest.fixture
def busy_cluster(server, cluster_admin):
    """TR-4858's nodes and projects with §4.8's sixteen GPUs of work running."""
    client = replay.Portal(server.url, issue_token(cluster_admin, "test")[1])
    replay.prepare(client, SCENARIO, clean=False)
    run_step(client, 0)


def _record(messages: list, message) -> None:
    where = message.location.get("url", "")
    if where.endswith("/favicon.ico"):  # Django's admin names no icon; Chromium asks anyway
        return
    messages.append(f"{message.type}: {message.text} ({where})")


@pytest.fixture
def watched(page):
    """The page, recording console messages, page errors and CSP violations."""
    page.messages = []
    page.on("console", lambda message: _record(page.messages, message))
    page.on("pageerror", lambda error: page.messages.append(f"pageerror: {error}"))
    page.add_init_script(RECORD_VIOLATIONS)
    return page


@pytest.mark.parametrize("path", PAGES)
def test_the_page_works_under_the_policy(watched, server, busy_cluster, artifacts, path):
    page = watched
    sign_in(page, server, "root")
    page.messages.clear()  # the sign-in's own pages: checked as "/" is
    response = page.goto(server.url + path)
    policy = response.headers.get("content-security-policy", "")
    assert "default-src 'self'" in policy and "frame-ancestors 'none'" in policy, policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy, policy
    expect(page.locator(PAGES[path]).first).to_be_visible()
    if path == "/":
        expect(page.locator("#live")).to_have_attribute("data-state", "live")  # the websocket
    page.wait_for_timeout(500)  # late violations (plotly's resize, Swagger UI's rendering)
    name = path.strip("/").replace("/", "-") or "overview"
    page.screenshot(path=artifacts / f"csp-{name}.png", full_page=True)
    assert page.evaluate("window.__violations") == []
    assert page.messages == []
    assert page.hosts == {server.netloc}, page.hosts
