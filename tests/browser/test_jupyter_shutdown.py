"""Issue 34 items 1 and 4 in Chromium: JupyterLab's own File > Shut Down stops the job - Stopped,
with Resume on its page - instead of failing it ("failed by the cluster: ... the Jupyter server
exited") and listing it under "Stuck or failing"; Resume then opens the lab again."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import expect

from agents.sessions import LocalSessions
from tests.browser.conftest import launch_lab

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]


def test_file_shut_down_in_jupyterlab_stops_the_job_resumably(
    page, server, member, nodes, artifacts, settings
):
    from portal.jobs.models import Job, Status

    launch_lab(page, server, "bob")
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.wait_for(timeout=30_000)
    session = LocalSessions(settings.ALLOT_SESSIONS_DIR).get("team-a", "jupyter-bob")
    page.get_by_role("menuitem", name="File").click()
    page.get_by_role("menuitem", name="Shut Down", exact=True).click()
    page.get_by_role("button", name="Shut Down").click()  # JupyterLab's own confirmation
    expect(page.get_by_text("Server stopped")).to_be_visible(timeout=15_000)
    page.screenshot(path=artifacts / "jupyter-shut-down.png")
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and Job.objects.get(name="jupyter-bob").status != "Stopped":
        time.sleep(0.1)
    job = Job.objects.get(name="jupyter-bob")
    assert job.status == Status.STOPPED, list(job.events.values_list("message", flat=True))
    assert not any("failed" in m for m in job.events.values_list("message", flat=True))
    page.goto(f"{server.url}/jobs/team-a/jupyter-bob/")
    expect(page.locator("#job-status")).to_have_text("Stopped")
    expect(page.get_by_role("button", name="Resume")).to_be_visible()
    page.screenshot(path=artifacts / "jupyter-shut-down-job-page.png")
    deadline = time.monotonic() + 10  # and the server itself is gone, stopped by the agent
    while time.monotonic() < deadline and LocalSessions(settings.ALLOT_SESSIONS_DIR).get(
        "team-a", "jupyter-bob"
    ):
        time.sleep(0.1)
    assert LocalSessions(settings.ALLOT_SESSIONS_DIR).get("team-a", "jupyter-bob") is None, session

    # issue 34 item 4: a Stopped notebook offers Resume, not an "Open Jupyter" that reloads the
    # page without a word, and Resume opens the lab by itself once it answers
    expect(page.locator("#open-session")).to_have_count(0)
    page.get_by_role("button", name="Resume").click()
    page.wait_for_url("**/sessions/team-a/jupyter-bob/lab**", timeout=60_000)
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.wait_for(timeout=30_000)
