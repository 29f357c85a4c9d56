"""/ws/jobs/{project}/{name}/shell/ (`allot bash`): the portal relays the Kubernetes exec stream
of the job's first pod, after the same access checks as every job route; and the CLI's side."""

from __future__ import annotations

import asyncio
import io
import json
import threading

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from portal.jobs.models import Job, Status
from portal.tenancy.services import issue_token
from portal.web.shell import JobShellConsumer
from tests.agents.kubernetes.fake_api import FakeKubernetes, node

pytestmark = pytest.mark.django_db(transaction=True)
PATH = "/ws/jobs/team-a/sh/shell/"


@pytest.fixture
def running(api, member, nodes, monkeypatch):
    """team-a/sh Running on the fake cluster's dgx1-1, the portal's agent pointed at it."""
    fake = FakeKubernetes(auto_run=True)
    fake.nodes = [node("dgx1-1", 8), node("dgx1-2", 8)]
    agent = KubernetesAgent(KubernetesConfig(host=fake.url))
    monkeypatch.setattr("portal.scheduling.agent._agent", agent)
    body = {"project": "team-a", "name": "sh", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    job = Job.objects.get(name="sh")
    job.status, job.placement = Status.RUNNING, [{"node": "dgx1-1", "devices": [0], "share": 1}]
    job.started_at = job.submitted_at
    job.save()
    from portal.scheduling.agent import job_spec

    agent.start(job_spec(job))
    yield fake
    agent.close()
    fake.close()


def connect(user=None, token: str | None = None) -> WebsocketCommunicator:
    headers = [(b"authorization", f"Token {token}".encode())] if token else []
    communicator = WebsocketCommunicator(JobShellConsumer.as_asgi(), PATH, headers=headers)
    communicator.scope["user"] = user or AnonymousUser()
    communicator.scope["url_route"] = {"kwargs": {"project": "team-a", "name": "sh"}}
    return communicator


async def shell_session(
    communicator, lines: list[bytes], first: str | None = None
) -> tuple[bytes, dict | None]:
    connected, code = await communicator.connect()
    assert connected, code
    if first is not None:
        await communicator.send_to(text_data=first)
    await communicator.send_to(text_data=json.dumps({"resize": [100, 30]}))
    for line in lines:
        await communicator.send_to(bytes_data=line)
    out, end = b"", None
    while end is None:
        message = await communicator.receive_output(timeout=10)
        if message["type"] == "websocket.send" and message.get("bytes"):
            out += message["bytes"]
        elif message["type"] == "websocket.send":
            end = json.loads(message["text"])
        else:
            break
    return out, end


def test_a_researcher_gets_a_shell_in_the_jobs_first_pod_with_its_exit_code(running, member):
    token = issue_token(member, "allot CLI")[1]  # as the CLI connects
    out, end = asyncio.run(
        shell_session(connect(token=token), [b"echo $((20 + 22))\n", b"exit 7\n"])
    )
    assert b"42" in out and end == {"exit": 7}
    assert running.execs[0][:2] == ("allot-team-a", "sh-0")
    assert running.resizes == [{"Width": 100, "Height": 30}]


def test_a_message_nested_too_deep_is_ignored_and_the_shell_goes_on(running, member):
    """Issue 22 item 5, on the shell's socket: json.loads of a 100,000-deep message raises
    RecursionError, which must not end the user's shell."""
    token = issue_token(member, "allot CLI")[1]
    deep = '{"resize": ' + "[" * 100_000 + "]" * 100_000 + "}"
    out, end = asyncio.run(
        shell_session(connect(token=token), [b"echo $((20 + 22))\n", b"exit 7\n"], first=deep)
    )
    assert b"42" in out and end == {"exit": 7}


@pytest.mark.parametrize(
    ("who", "code"), [("viewer", 4403), ("outsider", 4404), (None, 4401)]
)  # fmt: skip
def test_who_may_not_open_a_shell_is_refused(running, request, who, code):
    user = request.getfixturevalue(who) if who else None

    async def refused():
        communicator = connect(user)
        connected, close_code = await communicator.connect()
        return connected, close_code

    assert asyncio.run(refused()) == (False, code)
    assert running.execs == []


def test_a_job_that_is_not_running_has_no_shell(running, member):
    Job.objects.filter(name="sh").update(status=Status.PENDING)

    async def refused():
        return await connect(member).connect()

    assert asyncio.run(refused()) == (False, 4409)


def test_an_agent_without_shells_refuses_a_running_job(running, member, monkeypatch):
    from agents.simulated import SimulatedAgent

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent())

    async def refused():
        return await connect(member).connect()

    assert asyncio.run(refused()) == (False, 4409)
    assert running.execs == []


def test_the_cli_relays_keystrokes_and_output_and_exits_with_the_shells_code():
    """`cli.shell.run_shell` against a websocket server that speaks the portal's shell protocol."""
    from websockets.sync.server import serve

    from cli.shell import run_shell

    seen = {}

    def handler(ws):
        seen["auth"] = ws.request.headers["Authorization"]
        seen["resize"] = json.loads(ws.recv())
        seen["keys"] = ws.recv()
        ws.send(b"remote says " + seen["keys"])
        ws.send(json.dumps({"exit": 5}))

    with serve(handler, "127.0.0.1", 0) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        port = server.socket.getsockname()[1]
        out = io.BytesIO()
        code = run_shell(f"http://127.0.0.1:{port}", "tok", "/ws/jobs/team-a/sh/shell/",
                         stdin=io.BytesIO(b"ls\n"), stdout=out)  # fmt: skip
        server.shutdown()
    assert code == 5 and out.getvalue() == b"remote says ls\n"
    assert seen["auth"] == "Token tok" and "resize" in seen["resize"]


@pytest.mark.parametrize("how", ["token revoked", "deactivated", "job stopped"])
def test_an_open_shell_closes_within_seconds_of_losing_access(running, member, settings, how):
    """Issue 32 item 4: access is checked again while the socket is open, not only at the
    handshake (code ran over an open socket after the user was removed and deactivated)."""
    from portal.tenancy.models import ApiToken

    settings.ALLOT_SESSIONS_RECHECK_S = 0.2
    token = issue_token(member, "allot CLI")[1]

    def take_away():
        if how == "token revoked":
            ApiToken.objects.filter(user=member).update(revoked_at=member.date_joined)
        elif how == "deactivated":
            type(member).objects.filter(pk=member.pk).update(is_active=False)
        else:
            Job.objects.filter(name="sh").update(status=Status.STOPPED)

    async def run():
        from channels.db import database_sync_to_async

        communicator = connect(token=token)
        connected, _ = await communicator.connect()
        assert connected
        await database_sync_to_async(take_away)()
        while True:  # what the shell printed so far, then the close within the recheck
            message = await communicator.receive_output(timeout=3)
            if message["type"] == "websocket.close":
                return message

    assert asyncio.run(run()) == {"type": "websocket.close", "code": 4403}
