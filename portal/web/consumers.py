"""The overview websocket (`/ws/overview/`): the cluster as the signed-in user may see it.

On connect the user gets the overview at once; after that, every broadcast of the cycle (see
`portal.scheduling.publish`: after each committed change, and every few seconds for utilization)
is cut down with the same `overview_for` the REST endpoint uses, with the user's projects read
again each time, so a membership removed a second ago already hides that project's jobs.
Anonymous connections are refused at the handshake.
"""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from portal.dashboards.overview import build_overview, overview_for, visible_projects
from portal.notify.dispatch import user_group
from portal.scheduling.publish import GROUP


class OverviewConsumer(AsyncJsonWebsocketConsumer):
    """Sends `{"type": "overview", "overview": {...}}` on connect and after every broadcast."""

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close()  # before accept: the handshake is refused (HTTP 403)
            return
        await self.channel_layer.group_add(GROUP, self.channel_name)
        await self.channel_layer.group_add(user_group(user.id), self.channel_name)
        await self.accept()
        overview = await database_sync_to_async(build_overview)(user)
        await self.send_json({"type": "overview", "overview": overview})

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(GROUP, self.channel_name)
        user = self.scope.get("user")
        if user is not None and user.is_authenticated:
            await self.channel_layer.group_discard(user_group(user.id), self.channel_name)

    async def job_notice(self, event: dict) -> None:
        """One of the user's jobs started, was preempted, ended or is warned: a toast."""
        await self.send_json({"type": "toast", "notice": event["notice"]})

    async def overview_updated(self, event: dict) -> None:
        """A broadcast of the full overview: forward this user's part of it."""
        # not thread-sensitive: the consumers of one broadcast look their users up concurrently
        lookup = database_sync_to_async(visible_projects, thread_sensitive=False)
        visible = await lookup(self.scope["user"])
        await self.send_json(
            {"type": "overview", "overview": overview_for(event["overview"], visible)}
        )

    async def receive_json(self, content, **kwargs) -> None:
        """Clients only listen; anything they send is ignored."""
