"""Issue 24 item 4: served as `make run` serves users (DEBUG off), a missing page, another team's
job, a viewer's session link and a request for an unknown host answer with the portal's own
pages, in its layout and with a way back, never Django's debug pages."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from portal.jobs import services
from tests.browser.conftest import USER_MODE, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE


def test_a_missing_page_is_the_portals_404_with_a_way_back(page, server, member, artifacts):
    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/")
    page.evaluate("url => { window.location.href = url; }", server.url + "/no-such-page/")
    page.wait_for_url("**/no-such-page/")
    expect(page.locator("h1")).to_have_text("Page not found")
    assert "URLconf" not in page.content() and "DEBUG = True" not in page.content()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()  # the portal's layout
    page.screenshot(path=artifacts / "error-404.png", full_page=True)
    page.get_by_role("link", name="Back to the previous page").click()
    page.wait_for_url(server.url + "/jobs/")
    page.goto(server.url + "/jobs/team-b/secret-job/")
    expect(page.locator("#error-message")).to_have_text("Job team-b/secret-job not found.")
    page.get_by_role("link", name="Go to the overview").click()
    page.wait_for_url(server.url + "/")


def test_a_viewer_opening_a_session_gets_the_portals_403(page, server, member, viewer, artifacts):
    services.submit_job(member, member.memberships.get().project, name="nb", type="interactive",
                        gpus=0.5, ports=[8888])  # fmt: skip
    sign_in(page, server, "vera")
    response = page.goto(server.url + "/sessions/team-a/nb/lab")
    assert response.status == 403
    expect(page.locator("h1")).to_have_text("Not allowed")
    expect(page.locator("#error-message")).to_contain_text("is bob's notebook")
    expect(page.get_by_role("link", name="Go to the overview")).to_be_visible()
    page.screenshot(path=artifacts / "error-403.png", full_page=True)


def test_an_unknown_host_is_a_400_page_and_the_api_answers_json(server):
    request = urllib.request.Request(server.url + "/", headers={"Host": "evil.example"})
    with pytest.raises(urllib.error.HTTPError) as bad:
        urllib.request.urlopen(request, timeout=10)
    assert bad.value.code == 400
    assert "Bad request" in bad.value.read().decode()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(server.url + "/api/v1/no-such-thing/", timeout=10)
    assert missing.value.code == 404
    assert missing.value.headers["Content-Type"] == "application/json"
