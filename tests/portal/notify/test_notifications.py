"""Notifications (Step 8): email to the owner, a toast in their browser, signed webhooks with
retries and a delivery log, sent after the commit and never on the cycle's time."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.core import mail

from portal.notify import dispatch
from portal.notify.models import Delivery, Preference, Webhook
from portal.scheduling.cycle import run_cycle

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def notifying(settings):
    settings.ALLOT_NOTIFICATIONS = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.ALLOT_WEBHOOK_BACKOFF_S = [0.05, 0.05]
    # the receivers here listen on loopback: these tests are about delivery, not the address guard
    settings.ALLOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    yield settings
    dispatch.wait_idle()


class Receiver:
    """A local webhook receiver: answers with `codes` in turn (then 200), or hangs."""

    def __init__(self, codes=(), hang_s: float = 0.0):
        self.codes, self.hang_s, self.requests = list(codes), hang_s, []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                if receiver.hang_s:
                    time.sleep(receiver.hang_s)
                code = receiver.codes.pop(0) if receiver.codes else 200
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"ok" if code == 200 else b"receiver broke")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def start_a_job(api, member, name="j", gpus=1):
    assert api(member).post("/api/v1/jobs/", {"project": "team-a", "name": name, "gpus": gpus},
                            format="json").status_code == 201  # fmt: skip
    return run_cycle(wait=True)


def test_the_owner_gets_an_email_when_the_job_starts(notifying, api, member, nodes):
    member.email = "bob@example.org"
    member.save()
    start_a_job(api, member)  # scheduled
    run_cycle(wait=True)  # running
    dispatch.wait_idle()
    subjects = [message.subject for message in mail.outbox]
    assert subjects == ["[Allot] team-a/j started"]
    assert mail.outbox[0].to == ["bob@example.org"] and "running on dgx1-" in mail.outbox[0].body


def test_no_email_for_a_user_who_turned_it_off(notifying, api, member, nodes):
    member.email = "bob@example.org"
    member.save()
    Preference.objects.create(user=member, email=False)
    start_a_job(api, member)
    run_cycle(wait=True)
    dispatch.wait_idle()
    assert mail.outbox == []


def test_a_webhook_gets_signed_json_and_is_retried_after_a_500(notifying, api, member, team_a,
                                                                 nodes):  # fmt: skip
    receiver = Receiver(codes=[500])
    webhook = Webhook.objects.create(project=team_a, url=receiver.url)
    try:
        start_a_job(api, member)
        run_cycle(wait=True)
        dispatch.wait_idle()
    finally:
        receiver.close()
    assert len(receiver.requests) == 2  # the 500, then the retry
    headers, body = receiver.requests[-1]
    assert headers["X-Allot-Signature"] == dispatch.signature(webhook.secret, body)
    assert headers["X-Allot-Event"] == "started"
    payload = json.loads(body)
    assert (payload["project"], payload["job"], payload["event"]) == ("team-a", "j", "started")
    assert payload["user"] == "bob" and payload["status"] == "Running"
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.attempts, delivery.delivered, delivery.status_code) == (2, True, 200)


def test_a_failing_webhook_gives_up_after_its_retries_and_says_why(notifying, api, member,
                                                                     team_a, nodes):  # fmt: skip
    receiver = Receiver(codes=[500, 500, 500])
    webhook = Webhook.objects.create(project=team_a, url=receiver.url)
    try:
        start_a_job(api, member)
        run_cycle(wait=True)
        dispatch.wait_idle()
    finally:
        receiver.close()
    delivery = Delivery.objects.get(webhook=webhook)
    assert (delivery.attempts, delivery.delivered) == (3, False)
    assert "HTTP 500" in delivery.error


def test_a_receiver_that_never_answers_does_not_delay_the_cycle(notifying, api, member, team_a,
                                                                 nodes, monkeypatch):  # fmt: skip
    monkeypatch.setattr(dispatch, "TIMEOUT_S", 3.0)
    notifying.ALLOT_WEBHOOK_BACKOFF_S = []

    def timed_cycles(name):
        start_a_job(api, member, name)
        started = time.perf_counter()
        run_cycle(wait=True)  # the cycle whose "running" events go to the webhook
        return time.perf_counter() - started

    quiet = timed_cycles("quiet")
    receiver = Receiver(hang_s=10)
    Webhook.objects.create(project=team_a, url=receiver.url)
    try:
        hanging = timed_cycles("hanging")
        dispatch.wait_idle()
    finally:
        receiver.close()
    print(
        f"cycle without a webhook {quiet * 1000:.0f} ms, with a hanging one {hanging * 1000:.0f} ms"
    )
    assert hanging < quiet + 0.5
    assert Delivery.objects.get(job_name="hanging").error == "timed out"


def test_notifications_wait_for_the_commit(notifying, api, member, team_a, nodes, monkeypatch):
    sent = []
    monkeypatch.setattr(dispatch, "enqueue", lambda ids: sent.append(ids))
    from django.db import transaction

    with transaction.atomic():
        dispatch.after_commit([1, 2])
        assert sent == []
    assert sent == [[1, 2]]


def test_the_overview_socket_shows_the_owners_toasts(notifying, member):
    from portal.web.consumers import OverviewConsumer

    async def scenario():
        communicator = WebsocketCommunicator(OverviewConsumer.as_asgi(), "/ws/overview/")
        communicator.scope["user"] = member
        await communicator.connect()
        await communicator.receive_json_from(timeout=5)  # the overview
        notice = {"event": "preempted", "kind": "evicted", "project": "team-a", "job": "j",
                  "message": "evicted: team-d reclaims its quota (R9)"}  # fmt: skip
        await get_channel_layer().group_send(dispatch.user_group(member.id),
                                             {"type": "job.notice", "notice": notice})  # fmt: skip
        message = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return message

    message = asyncio.run(scenario())
    assert message["type"] == "toast" and "reclaims" in message["notice"]["message"]
