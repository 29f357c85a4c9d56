"""The analytics page's CPU and memory charts in Chromium (issue 26): the cores and GiB that
jobs which ran requested, per project in the GPU chart's colours, with units on the axes."""

from __future__ import annotations

import time
from datetime import datetime, timedelta

import pytest
from playwright.sync_api import expect

from portal.tenancy.services import issue_token
from tests.browser.conftest import sign_in
from tests.browser.test_dashboards import replay

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def traces(page, chart: str) -> dict[str, dict]:
    """Each trace of a plotly chart by name: its values (gaps left out) and line colour."""
    script = f"""document.getElementById('{chart}').data.map(t => [t.name, t.y, t.line.color])"""
    return {
        name: {"values": [y for y in ys if y is not None], "color": color}
        for name, ys, color in page.evaluate(script)
    }


def axis_title(page, chart: str) -> str:
    return page.evaluate(f"document.getElementById('{chart}').layout.yaxis.title.text")


def test_the_cpu_and_memory_charts_show_what_the_jobs_that_ran_requested(
    page, server, cluster_admin, nodes, team_a, team_b, artifacts
):
    """team-a's 2-pod job asks 4 cores and 16 GiB a pod (8 cores, 32 GiB); team-b's CPU-only
    job 2.5 cores and 6 GiB, then is deleted; team-a's gang later doubles (a second job)."""
    admin = replay.Portal(server.url, issue_token(cluster_admin, "test")[1])
    begin = datetime.now().replace(second=0, microsecond=0)  # the browser's local time
    admin.require("POST", "/api/v1/jobs/", {"project": "team-a", "name": "train", "gpus": 2,
                                            "pods": 2, "cpu": "4", "memory": "16Gi"})  # fmt: skip
    admin.require("POST", "/api/v1/jobs/", {"project": "team-b", "name": "prep", "gpus": 0,
                                            "cpu": "2500m", "memory": "6Gi"})  # fmt: skip
    admin.settle()
    time.sleep(4)  # a few samples (one a second here)
    admin.require("DELETE", "/api/v1/jobs/team-b/prep/")
    admin.require("POST", "/api/v1/jobs/", {"project": "team-a", "name": "more", "gpus": 1,
                                            "cpu": "1", "memory": "1536Mi"})  # fmt: skip
    admin.settle()
    time.sleep(4)

    sign_in(page, server, "root")
    page.goto(server.url + "/analytics/")
    page.get_by_label("custom").check()
    page.locator("#from").fill(begin.strftime("%Y-%m-%dT%H:%M"))
    page.locator("#to").fill((datetime.now() + timedelta(minutes=1)).strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#status")).to_contain_text("one point per 1 s")

    cpu, memory = traces(page, "cpu-chart"), traces(page, "memory-chart")
    gpus = traces(page, "allocation-chart")
    assert set(cpu) == set(memory) == {"team-a", "team-b"}
    # team-a: 8 cores and 32 GiB, then 9 cores and 33.5 GiB with its second job
    assert 8 in cpu["team-a"]["values"] and cpu["team-a"]["values"][-1] == 9
    assert 32 in memory["team-a"]["values"] and memory["team-a"]["values"][-1] == 33.5
    # team-b's CPU-only job: cores and memory, and never a GPU; nothing once it is deleted
    assert 2.5 in cpu["team-b"]["values"] and cpu["team-b"]["values"][-1] == 0
    assert 6 in memory["team-b"]["values"] and memory["team-b"]["values"][-1] == 0
    assert set(gpus["team-b"]["values"]) == {0}
    for name in ("team-a", "team-b"):  # one colour per project across the charts
        assert cpu[name]["color"] == memory[name]["color"] == gpus[name]["color"]
    assert cpu["team-a"]["color"] != cpu["team-b"]["color"]
    assert axis_title(page, "cpu-chart") == "CPU (cores)"
    assert axis_title(page, "memory-chart") == "memory (GiB)"
    expect(page.locator("#cpu-chart .scatterlayer .trace")).to_have_count(2)  # drawn, not only data
    expect(page.locator("#memory-chart .scatterlayer .trace")).to_have_count(2)
    page.locator("#cpu-title").scroll_into_view_if_needed()
    page.screenshot(path=artifacts / "analytics-cpu-memory.png", full_page=True)
    assert page.hosts == {server.netloc}, page.hosts
