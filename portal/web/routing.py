"""Websocket routes (mounted by portal.asgi behind session authentication and an Origin check)."""

from django.urls import path, re_path

from portal.web.consumers import OverviewConsumer
from portal.web.sessions import SessionProxyConsumer
from portal.web.shell import JobShellConsumer
from portal.web.urls import SESSION

websocket_urlpatterns = [
    path("ws/overview/", OverviewConsumer.as_asgi()),
    re_path(SESSION, SessionProxyConsumer.as_asgi()),
    path("ws/jobs/<str:project>/<str:name>/shell/", JobShellConsumer.as_asgi()),
]
