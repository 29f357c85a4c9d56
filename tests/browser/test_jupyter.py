"""Step 4 end to end in Chromium: an admin makes team-e and adds a researcher, who launches
Jupyter on half a GPU and computes 6*7 in a notebook through the portal's proxy; a user outside
team-e gets 404 on the same URL; Stop ends the server process."""

from __future__ import annotations

import os
import time
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from agents.sessions import LocalSessions
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]


def sign_out(page) -> None:
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/login/")


def test_a_researcher_runs_6_times_7_in_jupyter_through_the_portal(
    page, server, cluster_admin, member, outsider, nodes, artifacts, settings
):
    # the admin creates team-e with quota 2 and adds bob as a researcher
    sign_in(page, server, "root")
    page.goto(server.url + "/projects/new/")
    page.get_by_label("Name", exact=True).fill("team-e")
    page.get_by_label("GPU quota").fill("2")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url(server.url + "/projects/team-e/")
    page.get_by_label("Username").fill("bob")
    page.get_by_label("Role").select_option("researcher")
    page.get_by_role("button", name="Add member").click()
    expect(page.locator('#members tr[data-member="bob"]')).to_contain_text("researcher")
    sign_out(page)

    # bob launches Jupyter on 0.5 GPU and opens it through the portal
    sign_in(page, server, "bob")
    page.goto(server.url + "/jupyter/new/")
    page.get_by_label("Project").select_option("team-e")
    page.get_by_label("GPUs").fill("0.5")
    launched = time.monotonic()
    page.get_by_role("button", name="Launch Jupyter").click()
    page.wait_for_url(server.url + "/jobs/team-e/jupyter-bob/")  # it opens the lab by itself
    page.wait_for_url("**/sessions/team-e/jupyter-bob/lab**", timeout=30_000)
    lab_url = page.url
    assert urlsplit(lab_url).hostname.endswith(".localhost")  # an origin of its own
    assert urlsplit(lab_url).hostname != urlsplit(server.url).hostname
    page.locator("#jupyter-config-data").wait_for(state="attached", timeout=30_000)
    print(f"JupyterLab page served {time.monotonic() - launched:.1f} s after Launch")
    launcher = page.locator('.jp-LauncherCard[data-category="Notebook"]').first
    launcher.wait_for(timeout=30_000)
    usable_s = time.monotonic() - launched
    page.screenshot(path=artifacts / "jupyter-lab-through-portal.png")
    launcher.click()
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell .cm-content").first
    editor.wait_for(timeout=30_000)
    expect(
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first
    ).to_be_attached(timeout=60_000)
    editor.click()
    page.keyboard.type("6*7")
    output = page.locator(".jp-OutputArea-output").first
    for attempt in range(3):  # JupyterLab may still be swapping in the notebook's kernel
        page.locator(".jp-Cell").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(output).to_have_text("42", timeout=10_000)
            break
        except AssertionError:
            page.screenshot(path=artifacts / f"jupyter-6x7-attempt-{attempt}.png")
    expect(output).to_have_text("42")
    print(f"6*7 shown after {attempt + 1} attempt(s)")
    page.screenshot(path=artifacts / "jupyter-6x7.png")
    print(f"Jupyter usable through the portal {usable_s:.1f} s after Launch")

    # the token stays in the portal; a user outside team-e gets 404 on the same URL
    assert LocalSessions(settings.ALLOT_SESSIONS_DIR).get("team-e", "jupyter-bob").token not in (
        page.content()
    )
    other = page.context.browser.new_context()
    intruder = other.new_page()
    sign_in(intruder, server, "eve")
    answer = intruder.goto(server.url + "/sessions/team-e/jupyter-bob/lab")
    assert answer.status == 404
    assert intruder.goto(page.url).status == 404  # the lab's own address: sent to the portal
    other.close()

    # Stop ends the server process
    session = LocalSessions(settings.ALLOT_SESSIONS_DIR).get("team-e", "jupyter-bob")
    page.goto(server.url + "/jobs/team-e/jupyter-bob/")
    stopped = time.monotonic()
    page.once("dialog", lambda dialog: dialog.accept())  # Stop asks first (issue 34 item 7)
    page.get_by_role("button", name="Stop").click()
    page.wait_for_url(server.url + "/jobs/team-e/jupyter-bob/")  # Stopped, resumable
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(session.pid):
        time.sleep(0.05)
    assert not _alive(session.pid), "the Jupyter server still runs after Stop"
    print(f"Jupyter stopped {time.monotonic() - stopped:.2f} s after Stop")
    page.goto(lab_url)  # the lab's address now leads to the job's page, which says why
    page.wait_for_url(server.url + "/jobs/team-e/jupyter-bob/")
    expect(page.locator("#job-status")).to_have_text("Stopped")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie of the server process counts as gone
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_a_file_written_in_jupyterlab_survives_stop_and_relaunch(
    page, server, member, nodes, artifacts, settings
):
    """Issue 23: bob's notebooks in team-a live in his workspace there, which outlives sessions."""
    sign_in(page, server, "bob")
    first = _launch(page, server, "team-a")
    _run(page, "open('kept.txt', 'w').write('survives stop')", "13")
    page.screenshot(path=artifacts / "workspace-written.png")
    sessions = LocalSessions(settings.ALLOT_SESSIONS_DIR)
    session = sessions.get("team-a", first)

    page.goto(f"{server.url}/jobs/team-a/{first}/")
    page.once("dialog", lambda dialog: dialog.accept())  # Stop asks first (issue 34 item 7)
    page.get_by_role("button", name="Stop", exact=True).click()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and _alive(session.pid):
        time.sleep(0.1)
    assert not _alive(session.pid), "the Jupyter server still runs after Stop"
    assert sessions.get("team-a", first) is None

    # JupyterLab reopens the workspace as it was left: the notebook, which may ask for its
    # kernel in a dialog - sooner or later on a busy machine, so whenever it shows, answer it
    kernel_dialog = page.locator(".jp-Dialog").get_by_role("button", name="Select")
    page.add_locator_handler(kernel_dialog, lambda button: button.click())
    second = _launch(page, server, "team-a")  # a new session, the same workspace
    page.locator(".jp-DirListing-content").get_by_text("kept.txt").wait_for(timeout=30_000)
    page.screenshot(path=artifacts / "workspace-relaunched.png")
    _run(page, "open('kept.txt').read()", "'survives stop'")
    page.screenshot(path=artifacts / "workspace-after-relaunch.png")
    print(f"launched {first}, stopped it, launched {second}: kept.txt was there")


def test_the_waiting_page_shows_its_steps_logs_no_errors_and_running_comes_with_the_lab(
    page, server, member, nodes, artifacts, settings
):
    """Issue 24 item 1: after "Launch Jupyter" the job's page shows the session's steps while it
    starts, logs nothing in the console, and opens the lab; the job says Running when the lab
    answers (within a second), not at some later tick."""
    from portal.jobs.models import Job, Status

    sign_in(page, server, "bob")
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.url + "/jupyter/new/")
    page.get_by_label("Project").select_option("team-a")
    page.get_by_role("button", name="Launch Jupyter").click()
    page.wait_for_url(server.url + "/jobs/team-a/jupyter-bob/")
    steps = page.locator("#session-steps li")
    expect(steps).to_have_count(4)
    assert steps.locator(".step-label").all_inner_texts() == [
        "Queued for a GPU",
        "GPU allocated",
        "Jupyter server starting",
        "JupyterLab answers",
    ]
    opens = urlsplit(page.locator("#session-steps").get_attribute("data-open"))
    assert (
        opens.hostname.endswith(".localhost") and opens.path == "/sessions/team-a/jupyter-bob/lab"
    )
    page.screenshot(path=artifacts / "jupyter-steps.png")

    sessions, answered, running = LocalSessions(settings.ALLOT_SESSIONS_DIR), None, None
    deadline = time.monotonic() + 60
    while running is None and time.monotonic() < deadline:
        if answered is None and sessions.ready("team-a", "jupyter-bob"):
            answered = time.monotonic()
        if Job.objects.get(name="jupyter-bob").status == Status.RUNNING:
            running = time.monotonic()
        time.sleep(0.05)
    job = Job.objects.get(name="jupyter-bob")
    assert answered is not None and running is not None, (
        f"the lab never answered ({sessions.get('team-a', 'jupyter-bob')}), or the job never said "
        f"Running ({job.status}: {list(job.events.values_list('message', flat=True))})"
    )
    print(f"the job said Running {running - answered:+.2f} s after the lab answered")
    assert running - answered < 1.0
    page.wait_for_url("**/sessions/team-a/jupyter-bob/lab**", timeout=30_000)
    page.locator("#jupyter-config-data").wait_for(state="attached", timeout=30_000)
    assert errors == [], f"the waiting page logged errors: {errors}"


def _launch(page, server, project: str) -> str:
    """Launch Jupyter in `project` from the page, open it; the job's name."""
    page.goto(server.url + "/jupyter/new/")
    page.get_by_label("Project").select_option(project)
    page.get_by_label("GPUs").fill("0.5")
    page.get_by_role("button", name="Launch Jupyter").click()
    page.wait_for_url(f"{server.url}/jobs/{project}/jupyter-*/")
    name = page.url.split("/jobs/", 1)[1].split("/")[1]
    page.wait_for_url(f"**/sessions/{project}/{name}/lab**", timeout=60_000)  # by itself
    page.locator(".jp-DirListing-content").wait_for(timeout=60_000)  # the lab is up
    return name


def _run(page, code: str, shown: str) -> None:
    """Open a new notebook from a new launcher (JupyterLab reopens a workspace with its last
    notebook in front), run `code` in its first cell, expect `shown`."""
    page.locator('.jp-FileBrowser [data-command="launcher:create"]').first.click()
    page.locator('.jp-LauncherCard[data-category="Notebook"]:visible').first.click()
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    editor = notebook.locator(".jp-Cell .cm-content").first
    editor.wait_for(timeout=30_000)
    expect(
        notebook.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first
    ).to_be_attached(timeout=60_000)
    editor.click()
    page.keyboard.type(code)
    output = notebook.locator(".jp-OutputArea-output").first
    for _attempt in range(3):  # JupyterLab may still be swapping in the notebook's kernel
        notebook.locator(".jp-Cell").first.click()
        page.keyboard.press("Shift+Enter")
        try:
            expect(output).to_have_text(shown, timeout=10_000)
            return
        except AssertionError:
            continue
    expect(output).to_have_text(shown)
