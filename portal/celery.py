"""The Celery app: configured from Django settings (`CELERY_*`), tasks found by autodiscovery.

Every periodic task is registered here, in one place. A fast periodic task gets `expires` shorter
than its period, so a worker that falls behind drops stale ticks instead of replaying them.
"""

from __future__ import annotations

import functools
import logging
import os

from celery import Celery, bootsteps
from celery.beat import PersistentScheduler
from celery.worker.consumer import Consumer
from django.conf import settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")

CYCLE_TASK = "portal.scheduling.tasks.run_cycle"  # named, so beat needs no import of the app
AUDIT_PRUNE_TASK = "portal.audit.tasks.prune_audit_log"
AUDIT_PRUNE_PERIOD_S = 3600.0  # entries past ALLOT_AUDIT_RETENTION_DAYS go within the hour
JOBS_PRUNE_TASK = "portal.jobs.tasks.prune_job_history"
JOBS_PRUNE_PERIOD_S = 3600.0  # jobs ended more than ALLOT_JOB_RETENTION_DAYS ago, hourly
# Longer than any countdown (the webhook back-off's last wait) plus a task's run, else a message
# held for its countdown would be handed out twice; not the hour of kombu's default.
VISIBILITY_TIMEOUT_S = max([0.0, *settings.ALLOT_WEBHOOK_BACKOFF_S]) + 240
RECONNECT_EVERY_S = 2.0  # a worker tries the broker this often while it is away (kombu: up to 30)
logger = logging.getLogger(__name__)


class ResilientConsumer(Consumer):
    """The worker's consumer, reconnecting to a broker that went away every few seconds (never
    giving up: `broker_connection_max_retries = None`), so it catches up soon after it is back."""

    def connection_for_read(self, heartbeat=None):
        connection = self.app.connection_for_read(heartbeat=heartbeat)
        connection.ensure_connection = functools.partial(
            connection.ensure_connection, interval_start=0.5, interval_step=0.5,
            interval_max=RECONNECT_EVERY_S,
        )  # fmt: skip
        return self.ensure_connected(connection)

    def on_connection_error_after_connected(self, exc):
        # Closing the dead connection, kombu would give the held messages back to Redis — which
        # is away — and, the transport already detached, die of "'NoneType' object has no
        # attribute 'hostname'" (the issue's "Unrecoverable error"). RestoreUnacked gives them
        # back once connected again.
        channel = getattr(self.task_consumer, "channel", None)
        if channel is not None:
            channel.do_restore = False
        super().on_connection_error_after_connected(exc)


class ResilientScheduler(PersistentScheduler):
    """Beat's scheduler, trying a broker that went away every few seconds (Celery's: up to 30)."""

    def _ensure_connected(self):
        def retrying(exc, interval):
            logger.error("beat: broker unreachable (%s); trying again in %.1f s", exc, interval)

        return self.connection.ensure_connection(
            retrying, self.app.conf.broker_connection_max_retries, interval_start=0.5,
            interval_step=0.5, interval_max=RECONNECT_EVERY_S,
        )  # fmt: skip


class RestoreUnacked(bootsteps.StartStopStep):
    """Put back the messages the worker held when the broker went away.

    With Redis, a message handed to a worker waits in the `unacked` hash until acknowledged; when
    the connection is lost, kombu restores the unacknowledged ones to their queue at once — which
    fails while Redis is down, leaving them for the `visibility_timeout` sweep (an hour by
    default). This step keeps the channel of each connection and, once connected again, restores
    what its failed restore left (by delivery tag: never another worker's messages).
    """

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, c, **kwargs):
        self.previous = None
        super().__init__(c, **kwargs)

    def start(self, c):
        channel = c.task_consumer.channel
        if self.previous is not None:
            left = list(getattr(self.previous, "_delivered", {}) or ())
            if left:
                logger.warning("restoring %d message(s) held when the broker went away", len(left))
                for tag in left:
                    channel.qos.restore_by_tag(tag)
                self.previous._delivered.clear()
        self.previous = channel.qos


app = Celery("allot")
app.config_from_object("django.conf:settings", namespace="CELERY")
# A Redis outage is survived by every process: workers retry for ever (also on start-up), fail
# a command on a dead connection within seconds instead of hanging (socket timeouts, health
# checks) and take back what they held (RestoreUnacked); a message lost anyway (a worker killed
# with Redis) is redelivered after the visibility timeout, which must exceed the longest
# countdown (the webhook back-off's last wait) plus a task's run time.
app.conf.worker_consumer = "portal.celery:ResilientConsumer"
app.conf.beat_scheduler = "portal.celery:ResilientScheduler"
app.conf.broker_connection_retry = True
app.conf.broker_connection_retry_on_startup = True
app.conf.broker_connection_max_retries = None
app.conf.broker_transport_options = {
    "visibility_timeout": VISIBILITY_TIMEOUT_S,
    "unacked_restore_interval": 5,
    "unacked_restore_throttle": 1,
    "health_check_interval": 10,
    "retry_on_timeout": True,
    "socket_timeout": 10,
    "socket_connect_timeout": 5,
    "socket_keepalive": True,
}
# Publishing to a broker that is away gives up within a few seconds (the caller logs and goes
# on: `portal.notify.dispatch.enqueue` then sends in-process) instead of holding a request.
app.conf.task_publish_retry_policy = {"max_retries": 2, "interval_start": 0,
                                      "interval_step": 0.5, "interval_max": 1}  # fmt: skip
app.steps["consumer"].add(RestoreUnacked)
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
    "audit-retention": {
        "task": AUDIT_PRUNE_TASK,
        "schedule": AUDIT_PRUNE_PERIOD_S,
        "options": {"expires": AUDIT_PRUNE_PERIOD_S * 0.75},
    },
    "job-history-retention": {
        "task": JOBS_PRUNE_TASK,
        "schedule": JOBS_PRUNE_PERIOD_S,
        "options": {"expires": JOBS_PRUNE_PERIOD_S * 0.75},
    },
}
