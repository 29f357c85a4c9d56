"""Issue 32 item 1 in Chromium: a researcher's notebook serves a page whose script tries to make
its author staff with the session of the cluster admin who opens it. On its own origin (as
`make run` serves notebooks) the script finds neither the portal's cookies nor its API; the
admin is unchanged and the researcher is not staff."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import launch_lab, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser, pytest.mark.jupyter]

# What the attack of the issue did, as any script the researcher gets to run on the notebook's
# origin (a page of theirs, an output, an extension, the image's own server): read csrftoken and
# PATCH its author to staff with the browser's cookies, through the page's own origin and
# through the portal's address, and open the portal's sockets.
ATTACK = """async (portal) => {
  const results = {};
  try { results.cookies = document.cookie; } catch (error) { results.cookies = ""; }
  const token = (results.cookies.match(/csrftoken=([^;]+)/) || [])[1] || "";
  async function attempt(url) {
    try {
      const answer = await fetch(url, {method: "PATCH", credentials: "include",
        headers: {"Content-Type": "application/json", "X-CSRFToken": token},
        body: JSON.stringify({is_staff: true})});
      return answer.status;
    } catch (error) { return String(error); }
  }
  results.same_origin = await attempt("/api/v1/users/bob/");
  results.portal = await attempt(portal + "/api/v1/users/bob/");
  results.socket = await new Promise((done) => {
    const socket = new WebSocket(portal.replace("http", "ws") + "/ws/overview/");
    socket.onopen = () => { socket.close(); done("open"); };
    socket.onerror = () => done("refused");
  });
  return results;
}"""
OPEN_SOCKET = """(url) => new Promise((done) => { const s = new WebSocket(url);
  s.onopen = () => { s.close(); done("open"); }; s.onerror = () => done("refused"); })"""
PAGE = "<!doctype html><title>x</title><h1>Results of my experiment</h1>"


def _launch_and_plant(page, server) -> str:
    """bob launches Jupyter in team-a, writes x.html through the contents API; its URL."""
    launch_lab(page, server, "bob")
    body = json.dumps({"type": "file", "format": "text", "content": PAGE})
    status = page.evaluate(
        """async (body) => (await fetch("/sessions/team-a/jupyter-bob/api/contents/x.html",
            {method: "PUT", headers: {"Content-Type": "application/json"}, body})).status""",
        body,
    )
    assert status in (200, 201), status
    lab = urlsplit(page.url)
    return f"{lab.scheme}://{lab.netloc}/sessions/team-a/jupyter-bob/files/x.html"


def test_an_admin_opening_a_hostile_notebook_page_is_not_turned_against_the_portal(
    page, server, cluster_admin, member, nodes, artifacts
):
    from django.contrib.auth import get_user_model

    hostile = _launch_and_plant(page, server)
    assert urlsplit(hostile).hostname != urlsplit(server.url).hostname
    admin = page.context.browser.new_context()
    victim = admin.new_page()
    sign_in(victim, server, "root")
    victim.goto(server.url + "/jobs/team-a/jupyter-bob/")  # an admin opens it only on purpose
    victim.get_by_label("Reason").fill("bob asked me to look at his results")
    victim.once("dialog", lambda dialog: dialog.accept())
    victim.get_by_role("button", name="Access server").click()
    victim.wait_for_url("**/sessions/team-a/jupyter-bob/lab**")
    victim.goto(hostile)  # through the hand-off: the admin may open it now
    expect(victim.locator("h1")).to_have_text("Results of my experiment")
    assert urlsplit(victim.url).netloc == urlsplit(hostile).netloc
    sandboxed = victim.evaluate(ATTACK, server.url)  # Jupyter serves files/ sandboxed itself
    victim.screenshot(path=artifacts / "hostile-notebook-page.png")
    assert sandboxed["same_origin"] != 200 and sandboxed["portal"] != 200
    victim.goto(hostile.replace("/files/x.html", "/lab"))  # the notebook's origin itself
    victim.locator("#jupyter-config-data").wait_for(state="attached", timeout=30_000)
    results = victim.evaluate(ATTACK, server.url)
    print(sandboxed, results)
    assert "csrftoken" not in results["cookies"] and "sessionid" not in results["cookies"]
    assert results["same_origin"] == 404  # the sessions' origin serves no portal
    assert results["portal"] != 200  # refused by the browser (CORS) or by the portal
    assert results["socket"] == "refused"  # a notebook's page opens none of the portal's sockets
    assert get_user_model().objects.get(username="bob").is_staff is False
    assert get_user_model().objects.get(username="root").is_staff is True
    answer = victim.request.get(server.url + "/api/v1/users/bob/")
    assert answer.ok and answer.json()["is_staff"] is False
    admin.close()


def test_a_page_on_another_sessions_origin_cannot_open_this_ones_sockets(
    page, server, cluster_admin, member, nodes
):
    """A websocket to a session needs its own page's Origin, whatever cookie rides along."""
    _launch_and_plant(page, server)
    lab = urlsplit(page.url)
    own = page.evaluate(
        OPEN_SOCKET,
        f"ws://{lab.netloc}/sessions/team-a/jupyter-bob/api/events/subscribe",
    )
    assert own == "open"
    page.goto(server.url + "/")  # the portal's page opens no session socket either
    portal = page.evaluate(
        OPEN_SOCKET,
        f"ws://{lab.netloc}/sessions/team-a/jupyter-bob/api/events/subscribe",
    )
    assert portal == "refused"
