"""Issue 34 item 7 in Chromium: from JupyterLab there is a way back to the portal, as from a
JupyterHub server: File > Hub Control Panel opens the job's page on the portal's own origin (the
lab runs on the notebooks' origin), where Open, Stop and Resume are."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import launch_lab

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]


def test_file_hub_control_panel_in_jupyterlab_opens_the_jobs_page(page, server, member, nodes,
                                                                    artifacts):  # fmt: skip
    launch_lab(page, server, "bob")
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.wait_for(timeout=30_000)
    assert not page.url.startswith(server.url)  # the lab is on the notebooks' origin
    page.get_by_role("menuitem", name="File").click()
    page.screenshot(path=artifacts / "jupyter-file-menu-way-back.png")
    with page.context.expect_page() as opened:
        page.get_by_role("menuitem", name="Hub Control Panel").click()
    portal = opened.value
    portal.wait_for_load_state()
    assert portal.url == f"{server.url}/jobs/team-a/jupyter-bob/", portal.url
    expect(portal.locator("h1")).to_contain_text("team-a/jupyter-bob")
    expect(portal.get_by_role("button", name="Stop")).to_be_visible()
    portal.screenshot(path=artifacts / "jupyter-way-back-job-page.png")


def test_the_portal_answers_only_the_labs_two_ways_back(client, member, team_a):
    from portal.jobs.models import Job

    Job.objects.create(project=team_a, name="nb", user=member, type="interactive", gpus=1)
    client.force_login(member)
    home = client.get("/jobs/team-a/nb/hub/home")
    assert (home.status_code, home["Location"]) == (302, "/jobs/team-a/nb/")
    assert client.get("/jobs/team-a/nb/hub/spawn")["Location"] == "/jobs/team-a/nb/"
    assert client.get("/jobs/team-a/nb/hub/token").status_code == 404
    assert client.get("/jobs/team-a/gone/hub/home").status_code == 404
