"""ASGI entry point (daphne, and `runserver` through daphne): HTTP and websockets."""

import os

from channels.routing import ProtocolTypeRouter
from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

django_application = get_asgi_application()

application = ProtocolTypeRouter({"http": django_application})

# Only the web process imports this module: the embedded default's cycle timer starts here
# (a no-op when REDIS_URL is set, where Celery beat and workers run the cycle).
from portal.scheduling.embedded import start_embedded_cycle  # noqa: E402

start_embedded_cycle()
