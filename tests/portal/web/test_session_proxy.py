"""/sessions/{project}/{name}/: who gets in (the Jupyter itself is tested in tests/browser)."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def notebook(api, member, nodes):
    body = {"project": "team-a", "name": "nb", "gpus": 0.5, "type": "interactive",
            "ports": [8888]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201


def browser(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


URL = "/sessions/team-a/nb/lab"


def test_anonymous_visitors_are_sent_to_sign_in(notebook):
    response = browser().get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_an_outsider_gets_404_as_if_the_job_did_not_exist(notebook, outsider):
    assert browser(outsider).get(URL).status_code == 404
    assert browser(outsider).get("/sessions/team-a/missing/lab").status_code == 404


def test_a_viewer_may_not_run_code_in_the_project(notebook, viewer):
    assert browser(viewer).get(URL).status_code == 403


NAVIGATE = {"Sec-Fetch-Mode": "navigate", "Accept": "text/html"}  # a person opening the address


def test_a_member_opening_the_lab_early_waits_on_the_jobs_page_which_opens_it_later(
    notebook, member
):
    client = browser(member)
    response = client.get(URL + "/tree/a.ipynb", headers=NAVIGATE)
    assert response.status_code == 302 and response["Location"] == "/jobs/team-a/nb/"
    page = client.get("/jobs/team-a/nb/").content.decode()
    assert 'id="session-steps"' in page and 'data-open="/sessions/team-a/nb/lab/tree/a.ipynb"' in (
        page
    )
    assert 'data-step="queued" data-state="active"' in page  # the job is still Pending
    assert 'data-open=""' in client.get("/jobs/team-a/nb/").content.decode()  # only once


def test_jupyterlabs_own_requests_get_a_503_to_retry_while_the_server_is_not_up(notebook, member):
    response = browser(member).get("/sessions/team-a/nb/api/kernels")
    assert response.status_code == 503 and response["Retry-After"] == "1"
    assert "not answering yet (Pending)" in response.content.decode()


def test_the_job_page_links_to_the_session(notebook, member):
    page = browser(member).get("/jobs/team-a/nb/").content.decode()
    assert 'href="/sessions/team-a/nb/lab"' in page


@pytest.fixture
def pod_notebook():
    """A stand-in for a notebook server: records each request's path and Authorization; pages
    carry the token they were asked with (as JupyterLab's config does), /api/ answers JSON."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    seen = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            authorization = self.headers.get("Authorization") or ""
            seen.append((self.path, authorization or None))
            api = "/api/" in self.path
            data = b'{"ok": true}' if api else (
                f"<html>JupyterLab <script>{authorization.partition(' ')[2]}</script></html>"
            ).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Type", "application/json" if api else "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("X-Jupyter", "answered")
            self.send_header("Keep-Alive", "timeout=5")
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, seen
    server.shutdown()


def running_notebook():
    from portal.jobs.models import Job, Status

    Job.objects.filter(name="nb").update(status=Status.RUNNING, placement=[
        {"node": "dgx1-1", "devices": [0], "share": 0.5}])  # fmt: skip


@pytest.fixture
def agents_session(pod_notebook, monkeypatch):
    """The process's agent is a simulated one whose `sessions` answer at `pod_notebook`, token
    "t0ken"; the notebook job Running."""
    from agents.sessions import Session
    from agents.simulated import SimulatedAgent

    port, seen = pod_notebook

    class OneSession:
        def get(self, project, name):
            return Session(project, name, port, "t0ken", 0, f"/sessions/{project}/{name}/")

        def all(self):
            return []

        def stop(self, project, name):
            return False

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=OneSession()))
    running_notebook()
    return seen


def test_the_proxy_finds_the_session_in_the_processs_agent(notebook, member, agents_session):
    """The session the cycle started through the agent is the one the proxy reaches: it asks the
    agent's `sessions`, whatever kind of agent it is, and builds none of its own."""
    response = browser(member).get(URL)
    assert response.status_code == 200 and b"JupyterLab" in response.content
    assert agents_session == [("/sessions/team-a/nb/lab", "token t0ken")]


def test_a_page_reaches_the_browser_whole_without_the_servers_token(
    notebook, member, agents_session
):
    response = browser(member).get(URL)
    assert not response.streaming
    assert response.content == b"<html>JupyterLab <script></script></html>"
    assert response["X-Jupyter"] == "answered" and "Keep-Alive" not in response


def test_other_answers_stream_through_with_their_query_and_headers(
    notebook, member, agents_session
):
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def fetch():  # one event loop for the request and its streamed body
        client = AsyncClient()
        await client.aforce_login(member)
        response = await client.get("/sessions/team-a/nb/api/contents?type=directory&x=%2F")
        return response, b"".join([chunk async for chunk in response.streaming_content])

    response, body = async_to_sync(fetch)()
    assert response.status_code == 200 and body == b'{"ok": true}'
    assert response["X-Jupyter"] == "answered" and "Keep-Alive" not in response
    assert agents_session == [("/sessions/team-a/nb/api/contents?type=directory&x=%2F",
                               "token t0ken")]  # fmt: skip


def test_an_agent_that_runs_no_sessions_leaves_the_page_waiting(notebook, member, monkeypatch):
    from agents.simulated import SimulatedAgent

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=None))
    running_notebook()
    assert browser(member).get(URL).status_code == 503
    response = browser(member).get(URL, headers=NAVIGATE, follow=True)
    assert response.redirect_chain == [("/jobs/team-a/nb/", 302)]
    assert 'data-step="server" data-state="active"' in response.content.decode()


def test_under_kubernetes_the_proxy_reaches_the_pod_with_the_derived_token(
    notebook, member, pod_notebook, monkeypatch
):
    from dataclasses import replace

    from agents.kubernetes.agent import KubernetesAgent
    from agents.kubernetes.inventory import KubernetesConfig
    from agents.kubernetes.sessions import KubernetesSessions, session_token
    from portal.scheduling.agent import session_secret

    port, seen = pod_notebook
    agent = KubernetesAgent(KubernetesConfig(host="http://127.0.0.1:9",
                                             session_secret=session_secret()))  # fmt: skip
    monkeypatch.setattr("portal.scheduling.agent._agent", agent)  # as ALLOT_AGENT=kubernetes
    real_get = KubernetesSessions.get
    monkeypatch.setattr(  # the Service's DNS name resolves only inside a cluster
        KubernetesSessions, "get",
        lambda self, p, n: replace(real_get(self, p, n), host="127.0.0.1", port=port),
    )  # fmt: skip
    running_notebook()
    response = browser(member).get(URL)
    assert response.status_code == 200 and b"JupyterLab" in response.content
    assert seen == [("/sessions/team-a/nb/lab",
                     f"token {session_token(session_secret(), 'team-a', 'nb')}")]  # fmt: skip


def test_the_proxys_shared_client_hands_no_sessions_cookie_to_another_session(
    api, notebook, member, monkeypatch
):
    """One HTTP client serves every session (issue 24 item 1), and every session's server is on
    127.0.0.1: a cookie jar would send what one server set to all the others. It keeps none."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    from agents.sessions import Session
    from agents.simulated import SimulatedAgent
    from portal.jobs.models import Job, Status

    cookies = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            cookies[self.server.server_port] = self.headers.get("Cookie")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Set-Cookie", "planted=by-the-first; Path=/")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, *args):
            pass

    servers = {name: ThreadingHTTPServer(("127.0.0.1", 0), Handler) for name in ("nb", "nb2")}
    for server in servers.values():
        threading.Thread(target=server.serve_forever, daemon=True).start()

    class TwoSessions:
        def get(self, project, name):
            port = servers[name].server_port
            return Session(project, name, port, "t0ken", 0, f"/sessions/{project}/{name}/")

        def all(self):
            return []

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=TwoSessions()))
    body = {"project": "team-a", "name": "nb2", "gpus": 0.5, "type": "interactive",
            "ports": [8888]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    Job.objects.filter(name__in=["nb", "nb2"]).update(status=Status.RUNNING, placement=[
        {"node": "dgx1-1", "devices": [0], "share": 0.5}])  # fmt: skip

    async def visit():  # two browsers, one event loop: the proxy's one client
        first, second = AsyncClient(), AsyncClient()
        await first.aforce_login(member)
        await second.aforce_login(member)
        for client, name in ((first, "nb"), (second, "nb2")):
            response = await client.get(f"/sessions/team-a/{name}/api/status")
            assert response.status_code == 200
            [chunk async for chunk in response.streaming_content]

    try:
        async_to_sync(visit)()
    finally:
        for server in servers.values():
            server.shutdown()
    assert cookies[servers["nb2"].server_port] is None  # nothing of the first session's
