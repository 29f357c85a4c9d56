"""Issue 34 item 7 in Chromium: JupyterLab has a terminal (it had none), running as the
session's own user, and the job page's Stop asks before it ends a running notebook (an unsaved
cell was lost without a word)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import launch_lab

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]


def test_a_terminal_in_the_lab_and_stop_asks_first(
    page, server, member, nodes, artifacts, settings
):
    from portal.jobs.models import Job

    launch_lab(page, server, "bob")
    terminal_card = page.locator('.jp-LauncherCard[data-category="Other"][title*="erminal"]')
    terminal_card.first.click(timeout=30_000)
    page.get_by_role("textbox", name="Terminal input").wait_for(timeout=30_000)
    page.get_by_role("textbox", name="Terminal input").focus()
    page.keyboard.type("echo made-in-$((6*7)) as $(whoami) > terminal-proof.txt\n")
    # xterm draws on a canvas: the shell's work is read back from the file it wrote
    found = []
    for _ in range(60):
        found = list(Path(settings.ALLOT_SESSIONS_DIR).rglob("terminal-proof.txt"))
        if found and found[0].read_text().strip():
            break
        page.wait_for_timeout(250)
    assert found, "the terminal's command did not run"
    said = found[0].read_text().strip()
    assert said.startswith("made-in-42 as ") and not said.endswith(" root"), said
    page.screenshot(path=artifacts / "jupyter-terminal.png")

    page.goto(f"{server.url}/jobs/team-a/jupyter-bob/")
    questions = []

    def answer(dialog):
        questions.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", answer)
    page.locator("#stop-job").click()
    page.wait_for_timeout(500)
    assert questions and "unsaved changes are lost" in questions[0]
    assert Job.objects.get(name="jupyter-bob").status in ("ContainerCreating", "Running")
