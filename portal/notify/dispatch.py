"""Job events to people: email to the job's owner, a toast in their open browsers, and a signed
POST to each of the project's webhooks.

Notifications leave after the scheduling transaction commits (`after_commit`), never inside it,
and never on the cycle's thread: with Redis they are Celery tasks on their own `notify` queue
(its own worker in docker-compose), in the embedded default a small thread pool. A webhook that
fails is retried with back-off (`ALLOT_WEBHOOK_BACKOFF_S`); one that never answers costs its
own thread at most `TIMEOUT_S` an attempt, not the cycle. Every attempt is in the delivery log.
While Redis is away, what cannot be queued is sent from a thread of the calling process, and a
toast (Redis's channel layer) or an email that fails is logged and skipped: nothing here takes a
process down with it (issue 22 item 4; the workers' side is in `portal.celery`).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import close_old_connections, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import OperationalError

from portal.budgets.models import BudgetNotice
from portal.celery import app
from portal.jobs.models import JobEvent
from portal.jobs.redaction import redactor
from portal.notify import targets
from portal.notify.models import NOTIFIED, Delivery, Preference, Webhook
from portal.tenancy.models import Membership, Project, Role

logger = logging.getLogger(__name__)

TIMEOUT_S = 5.0
# The Celery tasks (`portal.notify.tasks`) call into this module, so it names them, one way.
NOTIFY_TASK = "portal.notify.tasks.notify_events"
DELIVER_TASK = "portal.notify.tasks.deliver_webhook"
SIGNATURE_HEADER = "X-Allot-Signature"  # "sha256=" + hex HMAC-SHA256 of the body with the secret
_pool: ThreadPoolExecutor | None = None


def user_group(user_id: int) -> str:
    """The Channels group of one user's open pages."""
    return f"user-{user_id}"


def after_commit(event_ids: list[int]) -> None:
    """Send the notifications of these events once the current transaction has committed."""
    if event_ids and settings.ALLOT_NOTIFICATIONS:
        transaction.on_commit(lambda: enqueue(list(event_ids)))


def enqueue(event_ids: list[int]) -> None:
    """Hand the events to the notification worker (Celery with Redis, else a thread); while the
    broker is away, send them from a thread of this process rather than lose them."""
    if settings.REDIS_URL and _send(NOTIFY_TASK, event_ids):
        return
    _submit(notify_events, event_ids)


def _send(task: str, argument, countdown: float = 0.0) -> bool:
    """Queue `task` on the notify queue; False (logged) when the broker cannot be reached."""
    try:
        app.send_task(task, (argument,), queue="notify", countdown=countdown or None)
    except (OperationalError, OSError) as exc:
        logger.warning("broker unreachable (%s): %s(%s) runs in this process", exc, task, argument)
        return False
    return True


def _submit(function, *args) -> None:
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="allot-notify")
    _pool.submit(_in_thread, function, *args)


def _in_thread(function, *args) -> None:
    try:
        function(*args)
    except Exception:
        logger.exception("notification failed")
    finally:
        close_old_connections()


def wait_idle(timeout: float = 30.0) -> None:
    """Wait until the embedded pool has sent everything queued so far (tests, shutdown)."""
    global _pool
    if _pool is not None:
        pool, _pool = _pool, None
        pool.shutdown(wait=True, cancel_futures=False)


def payload_of(event: JobEvent) -> dict:
    """The JSON a webhook receives and a toast shows."""
    job = event.job
    return {
        "event": NOTIFIED.get(event.kind, event.kind),
        "kind": event.kind,
        "project": event.project.name,
        "job": event.job_name,
        "user": job.user.get_username() if job is not None and job.user else None,
        "status": job.status if job is not None else None,
        "message": _redacted(event),
        "time": event.time.isoformat(),
    }


def _redacted(event: JobEvent) -> str:
    """The event's text for its project's channels: other projects' jobs unnamed (issue 32
    item 7)."""
    projects = Project.objects.values_list("name", flat=True)
    return redactor({event.project.name}, projects)(event.message)


def notify_events(event_ids: list[int]) -> None:
    """Email, toast and webhook deliveries for each notified event."""
    events = (
        JobEvent.objects.filter(id__in=event_ids, kind__in=NOTIFIED)
        .select_related("project", "job__user")
        .order_by("id")
    )
    for event in events:
        payload = payload_of(event)
        owner = event.job.user if event.job is not None else None
        people = [owner] if owner is not None else []
        if event.kind == "budget":
            people = budget_recipients(event)
        if event.kind == "reservation":  # the project's members, before its slot (R22)
            people = list(get_user_model().objects.filter(
                memberships__project_id=event.project_id).order_by("id"))  # fmt: skip
        for person in people:
            preference = Preference.objects.filter(user=person).first() or Preference()
            if preference.email and person.email:
                _guarded(_email, person.email, payload)
            if preference.browser:
                _guarded(_toast, person.id, payload)
        for webhook in Webhook.objects.filter(project_id=event.project_id, active=True):
            delivery = Delivery.objects.create(
                webhook=webhook, event=payload["event"], job_name=event.job_name, payload=payload
            )
            deliver(delivery.id)


def budget_recipients(event: JobEvent) -> list:
    """Who hears of a budget's threshold (R20.5): the user of a user's budget, else the admins
    of the budget's projects (a department's: of all its projects)."""
    notice = BudgetNotice.objects.filter(event=event).select_related("budget__user").first()
    if notice is None:
        return []
    budget = notice.budget
    if budget.user is not None:
        return [budget.user]
    projects = Project.objects.filter(
        Q(id=budget.project_id) | Q(department_id=budget.department_id, department__isnull=False)
    )
    admins = Membership.objects.filter(project__in=projects, role=Role.ADMIN)
    return list(get_user_model().objects.filter(id__in=admins.values("user_id")).order_by("id"))


def _guarded(send, *args) -> None:
    """An email or a toast that cannot be sent now (SMTP or Redis away) is logged and skipped:
    the other notifications of the event still go."""
    try:
        send(*args)
    except Exception as exc:
        logger.warning("%s not sent: %r", send.__name__.strip("_"), exc)


def _email(address: str, payload: dict) -> None:
    what = f"{payload['project']}/{payload['job']}" if payload["job"] else payload["project"]
    subject = f"[Allot] {what} {payload['event']}"
    body = f"{payload['message']}\n\nJob: {payload['project']}/{payload['job']}\n"
    send_mail(subject, body, settings.DEFAULT_FROM_EMAIL, [address], fail_silently=False)


def _toast(user_id: int, payload: dict) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(user_group(user_id), {"type": "job.notice",
                                                              "notice": payload})  # fmt: skip


def signature(secret: str, body: bytes) -> str:
    """The signature header's value for `body`."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def attempt(delivery: Delivery) -> bool:
    """POST the delivery once to its webhook's checked address (`targets`); record the status
    and a short fixed reason, never the reply's body; True when the receiver said 2xx."""
    body = json.dumps(delivery.payload, sort_keys=True).encode()
    headers = {"Content-Type": "application/json", "X-Allot-Event": delivery.event,
               SIGNATURE_HEADER: signature(delivery.webhook.secret, body)}  # fmt: skip
    delivery.attempts += 1
    delivery.last_attempt_at = timezone.now()
    delivery.status_code, delivery.error = _post(delivery.webhook.url, body, headers)
    delivery.delivered = delivery.status_code is not None and 200 <= delivery.status_code < 300
    delivery.save(update_fields=["attempts", "last_attempt_at", "status_code", "error",
                                 "delivered"])  # fmt: skip
    return delivery.delivered


def _post(url: str, body: bytes, headers: dict) -> tuple[int | None, str]:
    """(status code, reason) of one POST to the address `url` was checked to resolve to, the
    host named in Host and SNI only; redirects are answers, not followed; the body is not read."""
    try:
        target = targets.check(url)
    except targets.Unresolved:
        return None, "name does not resolve"
    except targets.TargetRefused:
        return None, "address not allowed"
    pinned = httpx.URL(url).copy_with(host=str(target.address))
    default_port = 443 if target.scheme == "https" else 80
    host = target.host if ":" not in target.host else f"[{target.host}]"
    headers = {**headers, "Host": host if target.port == default_port else f"{host}:{target.port}"}
    extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
    try:
        client = httpx.Client(timeout=TIMEOUT_S, follow_redirects=False, trust_env=False)
        with client, client.stream("POST", pinned, content=body, headers=headers,
                                   extensions=extensions) as response:  # fmt: skip
            code = response.status_code
    except httpx.TimeoutException:
        return None, "timed out"
    except httpx.ConnectError as exc:
        return None, "connection refused" if _refused(exc) else "could not connect"
    except httpx.HTTPError:
        return None, "request failed"
    return code, "" if 200 <= code < 300 else f"HTTP {code}"


def _refused(exc: BaseException | None) -> bool:
    while exc is not None and not isinstance(exc, ConnectionRefusedError):
        exc = exc.__cause__ or exc.__context__
    return exc is not None


def backoff() -> list[float]:
    """Seconds to wait before each retry (one entry per retry)."""
    return list(settings.ALLOT_WEBHOOK_BACKOFF_S)


def _retry_after(wait: float, delivery_id: int) -> None:
    time.sleep(wait)
    deliver(delivery_id)


def deliver(delivery_id: int) -> None:
    """Send one delivery, retrying with back-off: Celery re-enqueues, a thread sleeps."""
    delivery = Delivery.objects.select_related("webhook").get(id=delivery_id)
    if settings.REDIS_URL:
        if not attempt(delivery) and delivery.attempts <= len(backoff()):
            wait = backoff()[delivery.attempts - 1]
            if not _send(DELIVER_TASK, delivery_id, countdown=wait):
                _submit(_retry_after, wait, delivery_id)
        return
    for wait in [*backoff(), None]:
        if attempt(delivery) or wait is None:
            return
        time.sleep(wait)
