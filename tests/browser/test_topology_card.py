"""The nodes page's Topology card in Chromium (issue 38, R23.1): a cluster admin sets a pool's
levels and a default, sees them drawn, gets a bad level named next to its box, and removes
them; a researcher reads the card without its form."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.cluster.models import Node, PoolTopology
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_an_admin_sets_and_removes_a_pools_levels_on_the_nodes_page(
    page, server, cluster_admin, member, artifacts
):
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default",
                        labels={"example.com/rack": "r1"})  # fmt: skip
    sign_in(page, server, "root")
    page.goto(server.url + "/nodes/")
    form = page.locator("form", has=page.locator('input[name="topology_levels"]'))
    form.get_by_label("Levels").fill("example.com/rack, rack")
    form.get_by_role("button", name="Save topology").click()
    twice = page.locator("#err_topology_levels")
    expect(twice).to_contain_text("two levels have the short name 'rack'")
    assert not PoolTopology.objects.exists()

    form.get_by_label("Levels").fill("example.com/block, example.com/rack")
    form.get_by_label("Default required level").fill("rack")
    form.get_by_role("button", name="Save topology").click()
    row = page.locator('#topology-table tr[data-pool="default"]')
    expect(row).to_contain_text("example.com/block \u203a example.com/rack")
    expect(row.locator("td").nth(1)).to_have_text("rack")
    page.screenshot(path=artifacts / "nodes-topology.png", full_page=True)
    assert PoolTopology.objects.get(pool="default").default_required == "rack"

    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Remove").click()
    expect(page.locator("#topology-table")).to_contain_text("No pool has topology levels")
    assert not PoolTopology.objects.exists()
