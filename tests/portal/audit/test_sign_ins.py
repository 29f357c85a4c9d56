"""Sign-ins in the audit log: each success and failure, at the pages and at the token endpoint,
and each lockout once, with the account and the client's address (issue 22)."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from tests.portal.audit.conftest import entries, only

pytestmark = pytest.mark.django_db
RIGHT = "x-test-password-1"  # the personas' password (tests/conftest.py)
TOKEN = "/api/v1/auth/token/"


@pytest.fixture(autouse=True)
def fresh_throttle():
    """The login throttle counts in the cache, which outlives each test's transaction."""
    cache.clear()
    yield
    cache.clear()


def test_a_sign_in_at_the_page_is_recorded(member):
    client = Client(REMOTE_ADDR="192.0.2.10")
    assert client.post("/login/", {"username": "bob", "password": RIGHT}).status_code == 302
    entry = only("auth.login")
    assert (entry.actor, entry.actor_username, entry.address) == (member, "bob", "192.0.2.10")
    assert entry.note == "via /login/"


def test_a_wrong_password_is_recorded_with_the_name_tried(member):
    client = Client(REMOTE_ADDR="192.0.2.11")
    client.post("/login/", {"username": "bob", "password": "not-it"})
    client.post("/login/", {"username": "nobody", "password": "not-it"})
    bob, nobody = entries("auth.login_failed")
    assert (bob.actor_username, bob.address, bob.target_label) == ("bob", "192.0.2.11", "bob")
    assert bob.target_type == "user" and bob.actor is None  # the account was not signed in
    assert (nobody.actor_username, nobody.target_type) == ("nobody", "")
    assert not entries("auth.login")


def test_the_token_endpoint_records_failures(client_for, member):
    answer = client_for(None, "192.0.2.12").post(
        TOKEN, {"username": "bob", "password": "wrong"}, format="json"
    )
    assert answer.status_code == 401
    entry = only("auth.login_failed")
    assert (entry.actor_username, entry.address, entry.note) == ("bob", "192.0.2.12",
                                                                 f"via {TOKEN}")  # fmt: skip


def test_a_lockout_is_recorded_once_and_refused_tries_after_it(member):
    client = Client(REMOTE_ADDR="192.0.2.13")
    for i in range(5):
        client.post("/login/", {"username": "bob", "password": f"guess-{i}"})
    lockout = only("auth.lockout")
    assert (lockout.actor_username, lockout.address) == ("bob", "192.0.2.13")
    assert "after 5 failed sign-ins" in lockout.note
    refused = client.post("/login/", {"username": "bob", "password": RIGHT})
    assert refused.status_code == 429
    assert len(entries("auth.lockout")) == 1  # not one more per refused try
    last = entries("auth.login_failed")[-1]
    assert last.note.startswith("refused: locked out")
    assert len(entries("auth.login_failed")) == 6
    assert not entries("auth.login")


def test_the_address_behind_a_trusted_proxy_is_the_clients(member, settings):
    settings.ALLOT_TRUSTED_PROXIES = 1
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    client = Client(REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="203.0.113.77")
    client.post("/login/", {"username": "bob", "password": RIGHT})
    assert only("auth.login").address == "203.0.113.77"


def test_a_forwarded_for_header_is_ignored_without_trusted_proxies(member):
    client = Client(REMOTE_ADDR="192.0.2.14", HTTP_X_FORWARDED_FOR="203.0.113.77")
    client.post("/login/", {"username": "bob", "password": RIGHT})
    assert only("auth.login").address == "192.0.2.14"


def test_a_lockout_at_the_token_endpoint_is_recorded(client_for, member):
    client = client_for(None, "192.0.2.15")
    for i in range(5):
        client.post(TOKEN, {"username": "bob", "password": f"guess-{i}"}, format="json")
    lockout = only("auth.lockout")
    assert (lockout.actor_username, lockout.address) == ("bob", "192.0.2.15")
    assert lockout.note.endswith(f"via {TOKEN}")
    answer = client.post(TOKEN, {"username": "bob", "password": RIGHT}, format="json")
    assert answer.status_code == 429
    assert entries("auth.login_failed")[-1].note.startswith("refused: locked out")
