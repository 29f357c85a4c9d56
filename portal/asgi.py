"""ASGI entry point (daphne, and `runserver` through daphne): HTTP and websockets.

Websockets go through Django's session authentication (the browser's cookie) and an Origin
check against ALLOWED_HOSTS, so another site cannot open a socket with a user's cookie; a
notebook's page (on the sessions' origin) opens only its own session's sockets
(portal.web.session_origin.WebsocketOriginGate).
"""

import os

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

django_application = get_asgi_application()

from portal.web.routing import websocket_urlpatterns  # noqa: E402 (needs the apps loaded)
from portal.web.session_origin import WebsocketOriginGate  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": django_application,
        "websocket": WebsocketOriginGate(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Only the web process imports this module: the embedded default's cycle timer starts here
# (a no-op when REDIS_URL is set, where Celery beat and workers run the cycle).
from portal.scheduling.embedded import start_embedded_cycle  # noqa: E402

start_embedded_cycle()
