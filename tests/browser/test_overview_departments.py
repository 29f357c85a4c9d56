"""Issue 34 item 9 in Chromium: the overview groups projects by department (it never did), and
the nodes draw GPUs that pods outside Allot hold (issue 33)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.tenancy.models import Department, Membership, Project
from tests.browser.conftest import USER_MODE, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]
SERVER_ENV = USER_MODE


def test_the_overview_groups_projects_under_their_departments(
    page, server, cluster_admin, nodes, artifacts
):
    vision = Department.objects.create(name="vision", quota=6)
    Project.objects.create(name="cv-a", quota=2, department=vision)
    Project.objects.create(name="cv-b", quota=2, department=vision)
    Project.objects.create(name="solo", quota=1)
    type(nodes[0]).objects.filter(name="dgx1-2").update(outside_gpus=3)
    assert not Membership.objects.exists()
    sign_in(page, server, "root")
    rows = page.locator("#projects tbody tr")
    expect(rows).to_have_count(5)
    texts = [rows.nth(i).inner_text().split("\t")[0].strip() for i in range(5)]
    assert texts == ["No department", "solo", "Department vision", "cv-a", "cv-b"]
    expect(page.locator('[data-node="dgx1-2"] .device.outside')).to_have_count(3)
    expect(page.locator('[data-tile="gpus"] .sub')).to_contain_text("3 used outside Allot")
    page.screenshot(path=artifacts / "overview-departments.png", full_page=True)
