"""WSGI entry point (runserver without daphne, plain WSGI servers)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

application = get_wsgi_application()

# Only the web process imports this module: the embedded default's cycle timer starts here
# (a no-op when REDIS_URL is set, where Celery beat and workers run the cycle).
from portal.scheduling.embedded import start_embedded_cycle  # noqa: E402

start_embedded_cycle()
