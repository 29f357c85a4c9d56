"""/ws/overview/ with Channels' WebsocketCommunicator: each user hears only what they may see."""

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from portal.dashboards.overview import build_full_overview
from portal.scheduling.publish import GROUP
from portal.scheduling.settle import settle
from portal.web.consumers import OverviewConsumer

pytestmark = pytest.mark.django_db(transaction=True)


def connect(user) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(OverviewConsumer.as_asgi(), "/ws/overview/")
    communicator.scope["user"] = user
    return communicator


@pytest.fixture
def two_teams(api, cluster_admin, nodes, team_a, team_b):
    client = api(cluster_admin)
    for project, name in (("team-a", "a-visible"), ("team-b", "b-secret-run")):
        body = {"project": project, "name": name, "gpus": 1}
        assert client.post("/api/v1/jobs/", body, format="json").status_code == 201
    settle()


async def broadcast() -> None:
    """What the cycle sends after a commit (portal.scheduling.publish), sent from this loop."""
    overview = await database_sync_to_async(build_full_overview)()
    await get_channel_layer().group_send(GROUP, {"type": "overview.updated", "overview": overview})


def test_a_team_a_viewer_never_receives_team_b_job_names(two_teams, viewer):
    async def scenario():
        communicator = connect(viewer)
        connected, _ = await communicator.connect()
        assert connected
        messages = [await communicator.receive_json_from(timeout=5)]
        await broadcast()
        messages.append(await communicator.receive_json_from(timeout=5))
        await communicator.disconnect()
        return messages

    messages = asyncio.run(scenario())
    assert [m["type"] for m in messages] == ["overview", "overview"]
    for message in messages:
        text = str(message)
        assert "a-visible" in text
        assert "b-secret-run" not in text and "team-b" not in text
        assert message["overview"]["cluster"]["allocated_gpus"] == 2  # totals are everyone's


def test_the_cluster_admin_receives_every_job(two_teams, cluster_admin):
    async def scenario():
        communicator = connect(cluster_admin)
        await communicator.connect()
        await communicator.receive_json_from(timeout=5)
        await broadcast()
        message = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return message

    names = {j["name"] for j in asyncio.run(scenario())["overview"]["running"]}
    assert names == {"a-visible", "b-secret-run"}


def test_a_membership_removed_hides_the_project_from_the_next_message(two_teams, viewer):
    from portal.tenancy.models import Membership

    async def scenario():
        communicator = connect(viewer)
        await communicator.connect()
        first = await communicator.receive_json_from(timeout=5)
        await database_sync_to_async(Membership.objects.filter(user=viewer).delete)()
        await broadcast()
        second = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first, second

    first, second = asyncio.run(scenario())
    assert "a-visible" in str(first) and "a-visible" not in str(second)


def test_anonymous_connections_are_refused_at_the_handshake(db):
    async def scenario():
        communicator = connect(AnonymousUser())
        connected, _ = await communicator.connect()
        return connected

    assert asyncio.run(scenario()) is False
