"""portal.asgi answers HTTP with Django's WSGI handler in a thread pool, except the notebook
proxy's asynchronous views (issue 39: Django's ASGI handler cost a REST request a third more
CPU), and both halves answer as the portal does."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_started

from portal.asgi import HttpSplit, application


def routed(path: str, root_path: str = "") -> str:
    seen = []

    def app(name):
        async def answer(scope, receive, send):
            seen.append(name)

        return answer

    split = HttpSplit(app("asynchronous"), app("synchronous"))
    asyncio.run(split({"type": "http", "path": path, "root_path": root_path}, None, None))
    return seen[0]


@pytest.mark.parametrize(
    ("path", "root_path", "handler"),
    [
        ("/sessions/team-a/nb/lab", "", "asynchronous"),
        ("/api/v1/jobs/", "", "synchronous"),
        ("/", "", "synchronous"),
        ("/sessionsx/", "", "synchronous"),
        ("/allot/sessions/team-a/nb/", "/allot", "asynchronous"),
        ("/allot/api/v1/jobs/", "/allot", "synchronous"),
    ],
)
def test_only_the_notebook_proxy_goes_to_the_asgi_handler(path, root_path, handler):
    assert routed(path, root_path) == handler


def get(path: str, token: str | None = None) -> httpx.Response:
    headers = {"Authorization": f"Token {token}"} if token else {}

    async def call():
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            return await client.get(path, headers=headers)

    return asyncio.run(call())


@pytest.mark.django_db(transaction=True)  # the pool's threads read what the test wrote
def test_a_rest_request_is_answered_by_the_wsgi_handler_and_a_session_by_the_asgi_one(
    member, team_a
):
    from portal.jobs.models import Job
    from portal.tenancy.services import issue_token

    Job.objects.create(project=team_a, name="one", gpus=1, user=member)
    _, token = issue_token(member, "split")
    handlers = []

    def started(sender, **kwargs):
        handlers.append(sender)

    request_started.connect(started)
    try:
        answer = get("/api/v1/jobs/?project=team-a", token)
        assert answer.status_code == 200, answer.text
        assert [job["name"] for job in answer.json()["results"]] == ["one"]
        assert get("/api/v1/jobs/?project=team-a").status_code == 401
        assert get("/sessions/team-a/one/").status_code in (302, 403, 404)
    finally:
        request_started.disconnect(started)
    assert handlers == [WSGIHandler, WSGIHandler, ASGIHandler]
