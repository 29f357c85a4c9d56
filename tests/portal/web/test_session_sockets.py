"""A kernel's websocket through the portal (issue 32 item 4): it opens only from the session's own
page with its credential, and closes within ALLOT_SESSIONS_RECHECK_S of its user losing access -
code ran over an open socket after the admin had removed the user and closed their account."""

from __future__ import annotations

import asyncio
import threading

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.core import signing

from portal.core.origins import parse, session_key
from tests.portal.web import test_session_proxy as proxy_tests

notebook = proxy_tests.notebook  # the fixture of the proxy's tests
running_notebook = proxy_tests.running_notebook

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def kernel_server():
    """A stand-in for the notebook server's kernel socket: echoes what it is sent."""
    from websockets.asyncio.server import serve

    started, loop_box = threading.Event(), {}

    async def echo(socket):
        async for message in socket:
            await socket.send(message)

    async def main():
        async with serve(echo, "127.0.0.1", 0) as server:
            loop_box["port"] = server.sockets[0].getsockname()[1]
            loop_box["stop"] = asyncio.get_running_loop().create_future()
            started.set()
            await loop_box["stop"]

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    started.wait(10)
    yield loop_box["port"]
    loop.call_soon_threadsafe(loop_box["stop"].set_result, None)
    thread.join(10)


@pytest.fixture
def session_at(kernel_server, monkeypatch, settings, notebook):
    from agents.sessions import Session
    from agents.simulated import SimulatedAgent

    class OneSession:
        def get(self, project, name):
            return Session(project, name, kernel_server, "t0ken", 0,
                           f"/sessions/{project}/{name}/")  # fmt: skip

        def all(self):
            return []

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=OneSession()))
    settings.ALLOT_SESSIONS_ORIGIN = parse("http://*.nb.testserver")
    settings.ALLOT_PORTAL_URL = "http://testserver"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, ".nb.testserver"]
    settings.ALLOT_SESSIONS_RECHECK_S = 0.2
    running_notebook()


def _credential(user, job) -> str:
    import time

    from portal.web.session_origin import CREDENTIAL_SALT, _password_mark

    return signing.dumps({"u": user.pk, "j": job.pk, "p": _password_mark(user), "t": time.time()},
                         salt=CREDENTIAL_SALT)  # fmt: skip


def _communicator(host: str, origin: str, credential: str) -> WebsocketCommunicator:
    from portal.asgi import application

    return WebsocketCommunicator(
        application, "/sessions/team-a/nb/api/kernels/k1/channels",
        headers=[(b"host", host.encode()), (b"origin", origin.encode()),
                 (b"cookie", f"allot-notebook={credential}".encode())],
    )  # fmt: skip


def _job():
    from portal.jobs.models import Job

    return Job.objects.get(name="nb")


@pytest.mark.parametrize("how", ["removed", "deactivated", "stopped"])
def test_an_open_kernel_socket_closes_within_seconds_of_losing_access(
    session_at, member, team_a, how
):
    from portal.jobs.models import Status
    from portal.tenancy.models import Membership

    job = _job()
    host = f"{session_key(job.pk, 'team-a', 'nb')}.nb.testserver"
    credential = _credential(member, job)

    def take_away():
        if how == "removed":
            Membership.objects.filter(user=member, project=team_a).delete()
        elif how == "deactivated":
            type(member).objects.filter(pk=member.pk).update(is_active=False)
        else:
            type(job).objects.filter(pk=job.pk).update(status=Status.STOPPED)

    async def run():
        socket = _communicator(host, f"http://{host}", credential)
        connected, _ = await socket.connect()
        assert connected
        await socket.send_to(text_data="print(6*7)")
        assert await socket.receive_from(timeout=5) == "print(6*7)"  # code runs
        await sync_to_async(take_away)()
        closed = await socket.receive_output(timeout=2)  # within the 0.2 s recheck, or fails
        assert closed == {"type": "websocket.close", "code": 4403}
        await socket.disconnect()

    async_to_sync(run)()


def test_a_socket_opens_only_from_the_sessions_own_page(session_at, member):
    job = _job()
    host = f"{session_key(job.pk, 'team-a', 'nb')}.nb.testserver"
    credential = _credential(member, job)

    async def attempt(origin, cookie=credential, on=host):
        socket = _communicator(on, origin, cookie)
        connected, _ = await socket.connect()
        await socket.disconnect()
        return connected

    assert async_to_sync(attempt)(f"http://{host}")
    assert not async_to_sync(attempt)("http://0abc.nb.testserver")  # another session's page
    assert not async_to_sync(attempt)("http://testserver")  # the portal's page
    assert not async_to_sync(attempt)(f"http://{host}", cookie="forged")
    assert not async_to_sync(attempt)("http://testserver", on="testserver")  # portal's host
