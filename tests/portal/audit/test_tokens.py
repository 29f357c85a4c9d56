"""API tokens in the audit log: signing in at POST /api/v1/auth/token/ (a sign-in and a new
token), revoking one, and the revocation of all of a user's tokens by a password change; never
the key (issue 22)."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from portal.audit.models import AuditEntry
from tests.portal.audit.conftest import entries, only

pytestmark = pytest.mark.django_db
RIGHT = "x-test-password-1"  # the personas' password (tests/conftest.py)
TOKEN = "/api/v1/auth/token/"


@pytest.fixture(autouse=True)
def fresh_throttle():
    cache.clear()
    yield
    cache.clear()


def test_signing_in_for_a_token_records_the_sign_in_and_the_token(client_for, member):
    answer = client_for(None, "192.0.2.20").post(
        TOKEN, {"username": "bob", "password": RIGHT, "name": "laptop"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    key = answer.json()["token"]
    login, created = only("auth.login"), only("token.created")
    assert (login.actor, login.address, login.note) == (member, "192.0.2.20", f"via {TOKEN}")
    assert (created.actor, created.address, created.target_type) == (member, "192.0.2.20",
                                                                    "apitoken")  # fmt: skip
    assert created.target_label.startswith("laptop (") and "of bob" in created.target_label
    assert key not in str(list(AuditEntry.objects.values_list("target_label", "changes", "note")))


def test_revoking_a_token_is_recorded(client_for, member):
    client = client_for(None)
    issued = client.post(TOKEN, {"username": "bob", "password": RIGHT, "name": "ci"},
                         format="json").json()  # fmt: skip
    client.credentials(HTTP_AUTHORIZATION=f"Token {issued['token']}")
    assert client.delete(f"/api/v1/auth/tokens/{issued['id']}/").status_code == 204
    revoked = only("token.revoked")
    assert (revoked.actor, revoked.target_id, revoked.note) == (member, str(issued["id"]),
                                                               "revoked by its owner")  # fmt: skip


def test_a_password_change_revoking_every_token_is_recorded(client, client_for, cluster_admin,
                                                            member):  # fmt: skip
    for name in ("a", "b"):
        client_for(None).post(TOKEN, {"username": "bob", "password": RIGHT, "name": name},
                              format="json")  # fmt: skip
    client.force_login(cluster_admin)
    client.post("/users/bob/password/", {"password": "another-passphrase-7"})
    revoked = only("token.revoked")
    assert (revoked.actor_username, revoked.target_label) == ("root", "bob")
    assert revoked.note == "all 2 live token(s): password changed"
    assert len(entries("token.created")) == 2
