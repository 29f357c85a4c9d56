"""The Celery app: configured from Django settings (`CELERY_*`), tasks found by autodiscovery.

Every periodic task is registered here, in one place. A fast periodic task gets `expires` shorter
than its period, so a worker that falls behind drops stale ticks instead of replaying them.
"""

from __future__ import annotations

import os

from celery import Celery
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

CYCLE_TASK = "portal.scheduling.tasks.run_cycle"  # named, so beat needs no import of the app

app = Celery("allot")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

CYCLE_PERIOD_S = settings.ALLOT_CYCLE_INTERVAL_S  # the same period as the embedded timer's

# Save beat's schedule after every tick: cheap at this rate, and the compose health check of
# the beat container reads the file's age to tell a live beat from a hung one.
app.conf.beat_sync_every = 1
app.conf.beat_schedule = {
    "scheduling-cycle": {
        "task": CYCLE_TASK,
        "schedule": CYCLE_PERIOD_S,
        "options": {"expires": CYCLE_PERIOD_S * 0.75},
    },
}
