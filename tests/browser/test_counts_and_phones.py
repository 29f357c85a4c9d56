"""Issue 24 items 3 and 7 in Chromium: counts on the overview say whether they are the cluster's
or the user's projects'; every page fits a 390 px phone without sideways scrolling; a cordoned
node is not drawn as ready; a reversed analytics range clears the charts and says why; rule
codes link to their explanation."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs import services
from portal.jobs.models import Job
from tests.browser.conftest import USER_MODE, sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE


def _settled(page, server, running: int) -> None:
    for _ in range(40):
        if Job.objects.filter(status="Running").count() >= running:
            return
        page.wait_for_timeout(500)
    pytest.fail("the jobs never ran")


def test_a_researcher_of_one_team_sees_which_counts_are_whose(
    page, server, member, outsider, nodes, artifacts
):
    team_a, team_b = member.memberships.get().project, outsider.memberships.get().project
    services.submit_job(member, team_a, name="a-1", type="train", gpus=1)
    for name in ("b-1", "b-2"):
        services.submit_job(outsider, team_b, name=name, type="train", gpus=1)
    services.submit_job(outsider, team_b, name="b-huge", type="train", gpus=8, pods=3)  # waits
    sign_in(page, server, "bob")
    _settled(page, server, 3)
    page.reload()
    expect(page.locator("#running-count")).to_have_text("(1 in your projects, 3 in the cluster)")
    expect(page.locator("#pending-count")).to_have_text("(0 in your projects, 1 in the cluster)")
    expect(page.locator("#pending").locator("xpath=../..").locator(".empty")).to_have_text(
        "Nothing of your projects is waiting; other projects have 1 pending."
    )
    expect(page.locator('[data-tile="running"] .sub')).to_have_text(
        "in the cluster; 1 in your projects"
    )
    expect(page.locator('[data-tile="pending"] .value')).to_have_text("1")
    page.screenshot(path=artifacts / "overview-counts-researcher.png", full_page=True)


def test_a_cordoned_node_is_not_green_and_rule_codes_link_to_their_meaning(
    page, server, cluster_admin, member, nodes, artifacts
):
    Node.objects.filter(name="dgx1-2").update(schedulable=False)
    team_a = member.memberships.get().project
    services.submit_job(member, team_a, name="too-big", type="train", gpus=8, pods=3)
    sign_in(page, server, cluster_admin.username)
    ready = page.locator('#nodes article[data-node="dgx1-1"] header span').last
    cordoned = page.locator('#nodes article[data-node="dgx1-2"] header span').last
    expect(cordoned).to_have_text("cordoned")
    colour = "el => getComputedStyle(el).color"

    def colours() -> tuple[str, str] | None:
        # asked again until both are drawn: the live grid replaces its cards, and a card read as
        # it is replaced is detached, with no computed style
        pair = ready.evaluate(colour), cordoned.evaluate(colour)
        return pair if all(pair) else None

    ready_colour, cordoned_colour = wait_for(colours)
    assert ready_colour != cordoned_colour
    page.screenshot(path=artifacts / "overview-cordoned.png", full_page=True)

    link = page.locator("#pending a.rule").first
    expect(link).to_be_visible(timeout=20_000)
    code = link.inner_text()
    link.click()
    page.wait_for_url(f"{server.url}/rules/#{code}")
    expect(page.locator(f'dt[id="{code}"]')).to_be_visible()
    page.screenshot(path=artifacts / "rules.png", full_page=True)


def test_a_reversed_analytics_range_clears_the_charts_and_says_why(
    page, server, cluster_admin, team_a, nodes, artifacts
):
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/analytics/")
    expect(page.locator("#status")).to_contain_text("one point per")
    expect(page.locator("#status")).not_to_contain_text("1 projects")
    expect(page.locator("#allocation-chart .main-svg").first).to_be_attached()
    page.get_by_label("custom").check()
    page.locator("#from").fill("2026-01-02T10:00")
    page.locator("#to").fill("2026-01-01T10:00")
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#range-error")).to_have_text(
        "The range ends before it starts: choose a From earlier than the To."
    )
    expect(page.locator("#allocation-chart .main-svg")).to_have_count(0)
    page.screenshot(path=artifacts / "analytics-reversed-range.png", full_page=True)


PHONE = {"width": 390, "height": 844}


def test_every_page_fits_a_phone(chromium, server, cluster_admin, member, nodes, artifacts):
    team_a = member.memberships.get().project
    image = "registry.example.org/research/very-long-image-name:2026.11"
    services.submit_job(member, team_a, name="a-long-training-job-name-1", type="train", gpus=1,
                        image=image)  # fmt: skip
    context = chromium.new_context(viewport=PHONE, is_mobile=True)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        page.goto(server.url + "/login/")
        _fits(page, artifacts, "login")
        sign_in(page, server, cluster_admin.username)
        for path in _pages():
            page.goto(server.url + path)
            page.wait_for_load_state("networkidle")
            _fits(page, artifacts, path)
        page.goto(server.url + "/")  # the menu wraps: every link is on the screen
        for link in page.get_by_role("navigation", name="Main").get_by_role("link").all():
            box = link.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], link.inner_text()
    finally:
        context.close()


def _pages() -> list[str]:
    """Every page a signed-in admin can open: the routes without arguments, and one of each
    kind with them."""
    from portal.web import urls

    plain = [f"/{p.pattern}" for p in urls.urlpatterns
             if "<" not in str(p.pattern) and "(" not in str(p.pattern)
             # the booking form's preview answers the form's POST with JSON: no page
             and p.name not in ("logout", "login", "oidc-login", "oidc-callback",
                                "reservation-preview")]  # fmt: skip
    return [*plain, "/projects/team-a/", "/projects/team-a/edit/",
            "/jobs/team-a/a-long-training-job-name-1/", "/no-such-page/"]  # fmt: skip


def _fits(page, artifacts, name: str) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    shot = "phone-" + (name.strip("/").replace("/", "-") or "overview") + ".png"
    page.screenshot(path=artifacts / shot, full_page=True)
    assert width <= PHONE["width"], f"{name} is {width} px wide on a {PHONE['width']} px phone"
