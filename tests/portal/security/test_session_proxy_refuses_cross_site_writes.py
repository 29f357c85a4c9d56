"""Issue 22 item 6: the session proxy adds the notebook server's token, which turns Jupyter's own
XSRF check off, so it refuses itself any request that may change state unless it comes from the
portal's own pages; the proxy's websockets are refused another site's Origin by Channels'
AllowedHostsOriginValidator (portal.asgi)."""

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client, override_settings

KERNELS = "/sessions/team-a/nb/api/kernels"
EVIL = "http://evil.example"


@pytest.fixture
def upstream():
    """A stand-in notebook server that records (method, path) and starts "kernels"."""
    seen = []

    class Handler(BaseHTTPRequestHandler):
        def answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            self.rfile.read(length)
            seen.append((self.command, self.path))
            body = b'{"id": "k1"}'
            self.send_response(201 if self.command == "POST" else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port, seen
    server.shutdown()


@pytest.fixture
def session(api, member, nodes, upstream, monkeypatch):
    """team-a/nb Running, its session answering at `upstream`; the requests it saw."""
    from agents.sessions import Session
    from agents.simulated import SimulatedAgent
    from portal.jobs.models import Job, Status

    port, seen = upstream
    body = {"project": "team-a", "name": "nb", "gpus": 0.5, "type": "interactive",
            "ports": [8888]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    Job.objects.filter(name="nb").update(status=Status.RUNNING, placement=[
        {"node": "dgx1-1", "devices": [0], "share": 0.5}])  # fmt: skip

    class OneSession:
        def get(self, project, name):
            return Session(project, name, port, "t0ken", 0, f"/sessions/{project}/{name}/")

        def all(self):
            return []

        def stop(self, project, name):
            return False

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=OneSession()))
    return seen


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_a_cross_site_post_does_not_start_a_kernel(session, member):
    response = signed_in(member).post(KERNELS, "{}", content_type="application/json",
                                      HTTP_ORIGIN=EVIL)  # fmt: skip
    assert response.status_code == 403
    assert "evil.example" in response.content.decode()
    assert session == []  # the notebook server never heard of it


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["put", "patch", "delete"])
def test_other_cross_site_writes_are_refused_too(session, member, method):
    response = getattr(signed_in(member), method)(
        f"{KERNELS}/k1", "{}", content_type="application/json", HTTP_ORIGIN=EVIL
    )
    assert response.status_code == 403 and session == []


@pytest.mark.django_db
def test_a_post_from_the_portals_own_page_reaches_the_notebook(session, member):
    response = signed_in(member).post(KERNELS, "{}", content_type="application/json",
                                      HTTP_ORIGIN="http://testserver")  # fmt: skip
    assert response.status_code == 201  # (its body streams: read in test_session_proxy.py)
    assert session == [("POST", KERNELS)]


@pytest.mark.django_db
def test_without_an_origin_the_referer_decides(session, member):
    client = signed_in(member)
    own = client.post(KERNELS, "{}", content_type="application/json",
                      HTTP_REFERER="http://testserver/sessions/team-a/nb/lab")  # fmt: skip
    assert own.status_code == 201
    other = client.post(KERNELS, "{}", content_type="application/json",
                        HTTP_REFERER=f"{EVIL}/page")  # fmt: skip
    assert other.status_code == 403
    neither = client.post(KERNELS, "{}", content_type="application/json")
    assert neither.status_code == 403 and "neither" in neither.content.decode()
    assert session == [("POST", KERNELS)]


@pytest.mark.django_db
def test_a_null_origin_or_another_port_or_scheme_is_another_site(session, member):
    client = signed_in(member)
    for origin in ("null", "http://testserver:8080", "https://testserver"):
        response = client.post(KERNELS, "{}", content_type="application/json",
                               HTTP_ORIGIN=origin)  # fmt: skip
        assert response.status_code == 403, origin
    assert session == []


@pytest.mark.django_db
@override_settings(CSRF_TRUSTED_ORIGINS=["https://allot.example.org"])
def test_a_trusted_origin_is_the_portals_own(session, member):
    """Behind a TLS-terminating proxy the browser's origin is the one the operator trusts."""
    response = signed_in(member).post(KERNELS, "{}", content_type="application/json",
                                      HTTP_ORIGIN="https://allot.example.org")  # fmt: skip
    assert response.status_code == 201


@pytest.mark.django_db
def test_reads_from_anywhere_still_pass(session, member):
    """A GET changes nothing, and another site cannot read the answer (no CORS)."""
    response = signed_in(member).get(KERNELS, HTTP_ORIGIN=EVIL)
    assert response.status_code == 200 and session == [("GET", KERNELS)]


# --- The websocket half: portal.asgi's AllowedHostsOriginValidator ------------------------------


def websocket(origin: str | None, cookie: str):
    from channels.testing import WebsocketCommunicator

    from portal.asgi import application

    headers = [(b"host", b"localhost"), (b"cookie", f"sessionid={cookie}".encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    return WebsocketCommunicator(application, f"{KERNELS}/k1/channels", headers=headers)


@pytest.fixture
def reached(monkeypatch):
    """Who the session proxy's consumer was asked to find a session for (past the Origin check);
    it finds none, so the consumer then closes."""
    calls = []

    def find_session(user, project, name):
        calls.append((user.get_username(), project, name))
        return None, None

    monkeypatch.setattr("portal.web.sessions.find_session", find_session)
    return calls


@pytest.mark.django_db(transaction=True)
def test_a_cross_site_websocket_to_a_kernel_is_refused_before_the_proxy(member, reached):
    cookie = signed_in(member).cookies["sessionid"].value

    async def connect(origin):
        communicator = websocket(origin, cookie)
        connected, _ = await communicator.connect(timeout=5)
        await communicator.disconnect()
        return connected

    assert asyncio.run(connect(EVIL)) is False
    assert asyncio.run(connect(None)) is False  # no Origin: refused too
    assert reached == []
    asyncio.run(connect("http://localhost:8000"))  # the portal's host (ALLOWED_HOSTS)
    assert reached == [("bob", "team-a", "nb")]
