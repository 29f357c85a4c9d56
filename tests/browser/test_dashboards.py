"""The overview and analytics pages in Chromium while TR-4858 is replayed over REST (Step 3).

TR-4858 §4.8: four teams with quotas 4/2/2/8 on two DGX-1 submit 16 GPUs of work; team-b and
team-c run over quota on team-d's idle GPUs. §4.9: team-d takes its quota back. Then team-d's
jobs are deleted and team-a, -b and -c grow into the freed GPUs, the figure of the report.
"""

from __future__ import annotations

import importlib.util
import time
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from portal.tenancy.services import issue_token
from scheduler_tools.scenario import load_scenario
from tests.browser.conftest import sign_in
from tests.paths import ROOT, tr4858

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def _replay_module():
    path = ROOT / "scripts" / "replay_scenario.py"
    spec = importlib.util.spec_from_file_location("replay_scenario", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


replay = _replay_module()
SCENARIO = load_scenario(tr4858())


@pytest.fixture
def portal(server, cluster_admin):
    """A REST client of the server as the cluster admin, with TR-4858's nodes and projects."""
    client = replay.Portal(server.url, issue_token(cluster_admin, "test")[1])
    replay.prepare(client, SCENARIO, clean=False)
    return client


def run_step(portal, index: int) -> None:
    """Submit or delete what step `index` of the scenario says, settling after each, over REST."""
    step = SCENARIO.steps[index]
    for spec in step.get("submit", []):
        portal.require("POST", "/api/v1/jobs/", {k: v for k, v in spec.items() if v is not None})
        portal.settle()
    for spec in step.get("delete", []):
        portal.require("DELETE", f"/api/v1/jobs/{spec['project']}/{spec['name']}/")
        portal.settle()


def project_cells(page) -> dict[str, str]:
    rows = page.locator("#projects tbody tr")
    return {
        rows.nth(i).get_attribute("data-project"): rows.nth(i).locator(".alloc").inner_text()
        for i in range(rows.count())
    }


def test_tr4858_s4_8_shows_16_of_16_gpus_and_the_bars_live(page, server, portal, artifacts):
    sign_in(page, server, "root")
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")

    run_step(portal, 0)  # §4.8, while the page is open

    tile = page.locator('[data-tile="allocated"] .value')
    expect(tile).to_have_text("16")
    expect(page.locator('[data-tile="gpus"] .value')).to_have_text("16")
    expect(page.locator('#projects tr[data-project="team-d"] .alloc')).to_have_text("4 / 8")
    assert project_cells(page) == {
        "team-a": "4 / 4", "team-b": "4 / 2", "team-c": "4 / 2", "team-d": "4 / 8"}  # fmt: skip
    expect(page.locator("#running tbody tr")).to_have_count(13)
    # fractions are drawn device by device: 0.6 + 0.4 and 0.5 + 0.3 + 0.2 share a GPU each
    assert page.locator('.device[data-allocated="1"]').count() == 16
    # thirteen jobs of the admin started at once: three toasts and a summary, not a wall
    expect(page.locator(".toast-more")).to_contain_text("more change")
    assert page.locator(".toast:not([hidden]):not(.toast-more)").count() <= 3
    page.screenshot(path=artifacts / "overview-tr4858-4.8.png", full_page=True)

    started = time.monotonic()
    portal.require("POST", "/api/v1/jobs/", {"project": "team-a", "name": "a-late", "gpus": 1})
    page.locator('[data-job="team-a/a-late"]').wait_for(timeout=2000)
    assert time.monotonic() - started < 2.0
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    assert page.hosts == {server.netloc}, page.hosts


def test_deleting_team_d_moves_the_analytics_lines_as_in_the_report(
    page, server, portal, artifacts
):
    begin = datetime.now().replace(second=0, microsecond=0)  # the browser's local time
    hold_s = 4  # each phase lasts a few samples (one a second here)
    for index in (0, 2, 4, 6):  # §4.8, §4.9 (team-d reclaims), more work, team-d deleted
        run_step(portal, index)
        time.sleep(hold_s)
    sign_in(page, server, "root")
    page.goto(server.url + "/analytics/")
    page.get_by_label("custom").check()
    page.locator("#from").fill(begin.strftime("%Y-%m-%dT%H:%M"))
    page.locator("#to").fill((datetime.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#status")).to_contain_text("one point per 1 s")

    traces = page.evaluate(
        "document.getElementById('allocation-chart').data.map(t => [t.name, t.y])"
    )
    # §4.8 submits job by job, and a sample can fall before its last job is placed: the
    # report's story starts at the first sample holding all 16 GPUs
    held = [ys for name, ys in traces if not name.endswith(" quota")]
    full = next(
        i for i, column in enumerate(zip(*held, strict=True)) if sum(y or 0 for y in column) == 16
    )
    lines = {name: [y for y in ys[full:] if y is not None] for name, ys in traces}
    # team-d: 4 GPUs (§4.8), its quota of 8 after reclaiming (§4.9), 0 once its jobs are deleted
    assert 4 in lines["team-d"] and 8 in lines["team-d"] and lines["team-d"][-1] == 0
    # team-b and team-c: 4 over quota, back to their quota of 2, then 4 on the freed GPUs
    assert lines["team-b"][0] == 4 and 2 in lines["team-b"] and lines["team-b"][-1] == 4
    assert lines["team-a"][-1] == 8  # team-a doubles into team-d's GPUs
    assert set(lines["team-d quota"]) == {8}
    assert page.evaluate("document.getElementById('pending-chart').data.length") == 5
    csv_href = page.locator("#csv").get_attribute("href")
    assert "format=csv" in csv_href
    page.screenshot(path=artifacts / "analytics-tr4858.png", full_page=True)
    assert page.hosts == {server.netloc}, page.hosts


def test_the_pages_ask_anonymous_visitors_to_sign_in(page, server):
    page.goto(server.url + "/analytics/")
    assert page.url.startswith(server.url + "/login/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_the_overview_shows_reconnecting_and_recovers_when_the_server_restarts(
    page, server, cluster_admin
):
    sign_in(page, server, "root")
    live = page.locator("#live")
    expect(live).to_have_attribute("data-state", "live")
    page.evaluate("window.__sameDocument = true")
    server.stop()
    expect(live).to_have_attribute("data-state", "reconnecting")
    expect(live).to_have_text("reconnecting…")
    server.start()
    expect(live).to_have_attribute("data-state", "live", timeout=20_000)
    assert page.evaluate("window.__sameDocument") is True


def test_a_researcher_sees_a_toast_when_their_job_is_preempted(
    page, server, member, outsider, nodes, team_a, team_b, artifacts
):
    """bob's 16-GPU gang runs on idle GPUs beyond team-a's quota; eve of team-b then asks for
    team-b's quota, the scheduler reclaims it (R9) and bob's open page says so."""
    bob = replay.Portal(server.url, issue_token(member, "test")[1])
    eve = replay.Portal(server.url, issue_token(outsider, "test")[1])
    bob.require("POST", "/api/v1/jobs/", {"project": "team-a", "name": "big", "gpus": 8,
                                          "pods": 2})  # fmt: skip
    sign_in(page, server, "bob")
    expect(page.locator('[data-job="team-a/big"] .status-Running')).to_be_visible()
    eve.require("POST", "/api/v1/jobs/", {"project": "team-b", "name": "mine", "gpus": 2})
    toast = page.locator(".toast-evicted")
    expect(toast).to_contain_text("team-a/big preempted", timeout=10_000)
    expect(toast).to_contain_text("R9")
    page.screenshot(path=artifacts / "toast-preempted.png")
