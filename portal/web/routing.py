"""Websocket routes (mounted by portal.asgi behind session authentication and an Origin check)."""

from django.urls import path

from portal.web.consumers import OverviewConsumer

websocket_urlpatterns = [path("ws/overview/", OverviewConsumer.as_asgi())]
