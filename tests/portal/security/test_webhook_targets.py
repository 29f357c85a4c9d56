"""Issue 22 item 2: a project's webhook was a way into the cluster's network — a project admin
registered `http://127.0.0.1:PORT/internal` and the delivery log showed the first 200 characters
of that internal service's reply. Webhooks now reach public addresses only (checked when saved,
and again at delivery against DNS rebinding, connecting to the checked address), unless a
cluster admin allows a network (ALLOT_WEBHOOK_ALLOWED_NETWORKS); redirects are not followed and
the log keeps a status and a short fixed reason, never the reply's body."""

from __future__ import annotations

import ipaddress
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from portal.notify import dispatch, targets
from portal.notify.models import Delivery, Webhook

pytestmark = pytest.mark.django_db
HOOKS = "/api/v1/projects/team-a/webhooks/"
SECRET_REPLY = b"internal-service: root password is hunter2"


class Internal:
    """A service on loopback that answers every POST with `code`, `SECRET_REPLY` and headers."""

    def __init__(self, code: int = 500, headers: dict | None = None):
        self.requests: list[dict] = []
        internal = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                internal.requests.append(dict(self.headers))
                self.send_response(code)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(SECRET_REPLY)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}/internal"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def internal():
    made = []

    def make(**options) -> Internal:
        made.append(Internal(**options))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def no_retries(settings):
    settings.ALLOT_WEBHOOK_BACKOFF_S = []
    settings.ALLOT_WEBHOOK_ALLOWED_NETWORKS = []
    settings.REDIS_URL = None  # deliver() in this thread
    return settings


def deliver_once(webhook: Webhook) -> Delivery:
    delivery = Delivery.objects.create(webhook=webhook, event="started", job_name="j",
                                       payload={"event": "started"})  # fmt: skip
    dispatch.deliver(delivery.id)
    delivery.refresh_from_db()
    return delivery


def fake_dns(monkeypatch, answers: dict[str, list[str]]) -> None:
    monkeypatch.setattr(targets, "resolve", lambda host, port: answers[host])


def test_a_webhook_to_127_0_0_1_is_refused_when_saved_saying_why(api, owner, team_a, no_retries):
    response = api(owner).post(HOOKS, {"url": "http://127.0.0.1:8080/internal"}, format="json")
    assert response.status_code == 400
    (reason,) = response.json()["url"]
    assert "resolves to 127.0.0.1, a loopback address" in reason
    assert "ALLOT_WEBHOOK_ALLOWED_NETWORKS" in reason
    webhook = Webhook.objects.create(project=team_a, url="https://hooks.example.org/a")
    moved = api(owner).patch(f"{HOOKS}{webhook.id}/", {"url": "http://[::1]/"}, format="json")
    assert moved.status_code == 400 and "a loopback address" in moved.json()["url"][0]
    assert list(Webhook.objects.values_list("url", flat=True)) == ["https://hooks.example.org/a"]


def test_who_may_not_add_webhooks_hears_nothing_about_the_url(api, member, outsider, team_a):
    """The 404 (outsider) and 403 (member) come before any word on the body: the check of the
    address says nothing to someone who may not add a webhook at all."""
    body = {"url": "http://127.0.0.1:8080/internal"}
    assert api(outsider).post(HOOKS, body, format="json").status_code == 404
    assert api(member).post(HOOKS, body, format="json").status_code == 403
    assert not Webhook.objects.exists()


def test_the_project_page_says_the_same_and_saves_nothing(owner, team_a, no_retries):
    client = Client()
    client.force_login(owner)
    page = client.post("/projects/team-a/webhooks/", {"url": "http://localhost:9000/x"},
                       follow=True).content.decode()  # fmt: skip
    assert "localhost resolves to 127.0.0.1, a loopback address" in page
    assert not Webhook.objects.exists()


def test_a_host_name_resolving_to_a_private_address_is_refused(api, owner, no_retries,
                                                               monkeypatch):  # fmt: skip
    fake_dns(monkeypatch, {"hooks.corp.test": ["93.184.216.34", "10.1.2.3"]})
    response = api(owner).post(HOOKS, {"url": "https://hooks.corp.test/x"}, format="json")
    assert response.status_code == 400
    assert "hooks.corp.test resolves to 10.1.2.3, a private address" in response.json()["url"][0]


def test_a_webhook_stored_before_the_guard_is_refused_at_delivery_and_logs_no_body(
    team_a, internal, no_retries
):
    service = internal(code=500)
    webhook = Webhook.objects.create(project=team_a, url=service.url)  # as registered before
    delivery = deliver_once(webhook)
    assert service.requests == []  # never reached
    assert (delivery.delivered, delivery.status_code, delivery.error) == (
        False, None, "address not allowed",
    )  # fmt: skip
    assert "hunter2" not in delivery.error


def test_a_name_that_turns_private_after_it_was_saved_is_refused_at_delivery(
    api, owner, internal, no_retries, monkeypatch
):
    service = internal(code=200)
    fake_dns(monkeypatch, {"hooks.rebind.test": ["93.184.216.34"]})
    made = api(owner).post(HOOKS, {"url": f"http://hooks.rebind.test:{service.port}/"},
                           format="json")  # fmt: skip
    assert made.status_code == 201
    fake_dns(monkeypatch, {"hooks.rebind.test": ["127.0.0.1"]})  # the DNS answer changes
    delivery = deliver_once(Webhook.objects.get())
    assert delivery.error == "address not allowed" and service.requests == []


def test_delivery_connects_to_the_checked_address_and_names_the_host(
    team_a, internal, no_retries, monkeypatch
):
    """Resolved once: the request goes to the address that was checked, whatever a second
    lookup would say; the name is in the Host header only."""
    no_retries.ALLOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    service = internal(code=204)
    answers = iter([["127.0.0.1"], ["169.254.169.254"]])
    monkeypatch.setattr(targets, "resolve", lambda host, port: next(answers))
    webhook = Webhook.objects.create(project=team_a, url=f"http://hooks.test:{service.port}/x")
    delivery = deliver_once(webhook)
    assert (delivery.delivered, delivery.status_code, delivery.error) == (True, 204, "")
    assert service.requests[0]["Host"] == f"hooks.test:{service.port}"


def test_an_allowed_network_lets_an_internal_receiver_in_and_its_errors_keep_no_body(
    api, owner, team_a, internal, no_retries
):
    no_retries.ALLOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.0/8"]
    service = internal(code=500)
    made = api(owner).post(HOOKS, {"url": service.url}, format="json")
    assert made.status_code == 201
    delivery = deliver_once(Webhook.objects.get())
    assert len(service.requests) == 1
    assert (delivery.delivered, delivery.status_code, delivery.error) == (False, 500, "HTTP 500")


def test_a_redirect_is_not_followed(team_a, internal, no_retries):
    no_retries.ALLOT_WEBHOOK_ALLOWED_NETWORKS = ["127.0.0.1/32"]
    inside = internal(code=200)
    redirecting = internal(code=307, headers={"Location": inside.url})
    delivery = deliver_once(Webhook.objects.create(project=team_a, url=redirecting.url))
    assert len(redirecting.requests) == 1 and inside.requests == []
    assert (delivery.delivered, delivery.status_code, delivery.error) == (False, 307, "HTTP 307")


@pytest.mark.parametrize(
    ("address", "kind"),
    [
        ("127.0.0.1", "a loopback address"),
        ("::1", "a loopback address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("169.254.10.1", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("10.0.0.5", "a private address"),
        ("172.16.3.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd12:3456::1", "a private address"),
        ("0.0.0.0", "an unspecified address"),
        ("224.0.0.1", "a multicast address"),
        ("240.0.0.1", "a private address"),  # reserved: Python counts it private too
        ("100.64.0.1", "a non-public address"),  # carrier-grade NAT
        ("::ffff:127.0.0.1", "a loopback address"),  # IPv4-mapped
        ("::ffff:169.254.169.254", "a cloud metadata address"),
        ("64:ff9b::a00:1", "a private address"),  # NAT64 of 10.0.0.1
        ("93.184.216.34", None),
        ("2606:4700::1111", None),
    ],
)
def test_which_addresses_a_webhook_may_reach(address, kind, settings):
    settings.ALLOT_WEBHOOK_ALLOWED_NETWORKS = []
    assert targets.refusal(ipaddress.ip_address(address)) == kind


def test_a_bad_allowed_network_stops_the_portal_at_start(monkeypatch):
    from django.core.exceptions import ImproperlyConfigured

    from portal.settings import envnetworks

    monkeypatch.setenv("ALLOT_WEBHOOK_ALLOWED_NETWORKS", "10.20.0.0/16, fd00::/8")
    assert envnetworks("ALLOT_WEBHOOK_ALLOWED_NETWORKS") == ["10.20.0.0/16", "fd00::/8"]
    monkeypatch.setenv("ALLOT_WEBHOOK_ALLOWED_NETWORKS", "10.20.0.0/33")
    with pytest.raises(ImproperlyConfigured, match=r"10\.20\.0\.0/33"):
        envnetworks("ALLOT_WEBHOOK_ALLOWED_NETWORKS")
