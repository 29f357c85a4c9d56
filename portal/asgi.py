"""ASGI entry point (gunicorn's uvicorn workers, daphne, and `runserver` through daphne): HTTP
and websockets.

HTTP is answered by Django's WSGI handler in a pool of threads (a2wsgi), except the notebook
proxy (`/sessions/`), whose view is asynchronous and streams: Django's ASGI handler gives each
request a thread of its own and crosses between it and the event loop at every boundary of
sync and async middleware, which cost a REST request a third more CPU than the same request
answered synchronously (issue 39: 13.1 against 8.6 ms for a page of jobs; the thread pool's
bridge added 1-2 ms). The WSGI handler runs the same middleware, views and settings; the
audit and accounting CSVs stream through it a chunk at a time.

Websockets go through Django's session authentication (the browser's cookie) and an Origin
check against ALLOWED_HOSTS, so another site cannot open a socket with a user's cookie; a
notebook's page (on the sessions' origin) opens only its own session's sockets
(portal.web.session_origin.WebsocketOriginGate).
"""

import os

from a2wsgi import WSGIMiddleware
from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django.core.asgi import get_asgi_application
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

django_application = get_asgi_application()

from django.conf import settings  # noqa: E402

from portal.web.routing import websocket_urlpatterns  # noqa: E402 (needs the apps loaded)
from portal.web.session_origin import WebsocketOriginGate  # noqa: E402

ASYNC_PREFIXES = ("/sessions/",)  # served by Django's ASGI handler: asynchronous views


class HttpSplit:
    """Paths under `ASYNC_PREFIXES` to Django's ASGI handler, every other HTTP request to its
    WSGI handler in a pool of `settings.WEB_THREADS` threads."""

    def __init__(self, asynchronous, synchronous) -> None:
        self.asynchronous, self.synchronous = asynchronous, synchronous

    async def __call__(self, scope, receive, send) -> None:
        path, root = scope["path"], scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        app = self.asynchronous if path.startswith(ASYNC_PREFIXES) else self.synchronous
        await app(scope, receive, send)


http = HttpSplit(
    django_application, WSGIMiddleware(get_wsgi_application(), workers=settings.WEB_THREADS)
)

application = ProtocolTypeRouter(
    {
        "http": http,
        "websocket": WebsocketOriginGate(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Only the web process imports this module: the embedded default's cycle timer starts here
# (a no-op when REDIS_URL is set, where Celery beat and workers run the cycle).
from portal.scheduling.embedded import start_embedded_cycle  # noqa: E402

start_embedded_cycle()
