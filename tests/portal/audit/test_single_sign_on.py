"""Single sign-on in the audit log, through a real provider (tests/oidc_provider): the account
its first sign-in creates, the memberships the admins' rules add, change and remove - each the
signing-in user's, from their address - and the rules themselves (issue 22)."""

from __future__ import annotations

import pytest

from tests.oidc_provider.flow import sign_in
from tests.portal.audit.conftest import entries, only
from tests.portal.tenancy.test_oidc import PASSWORD, idp, portal  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow


def test_what_a_sign_in_does_to_accounts_and_roles_is_recorded(portal, idp):  # noqa: F811
    sign_in(portal, idp.url, "carol", PASSWORD)
    created = only("user.created")
    assert (created.actor_username, created.target_label) == ("carol", "carol")
    assert created.address == "127.0.0.1" and "single sign-on" in created.note
    added = {e.target_label: e.changes for e in entries("membership.added")}
    assert added == {"carol in vision (researcher)": {"role": [None, "researcher"]},
                     "carol in infra (viewer)": {"role": [None, "viewer"]}}  # fmt: skip
    assert {e.actor_username for e in entries("membership.added")} == {"carol"}
    assert only("auth.login").actor_username == "carol"
    idp.user("carol", PASSWORD, "ml-team", "ml-leads")  # promoted; left ops
    try:
        sign_in(portal, idp.url, "carol", PASSWORD)
    finally:
        idp.user("carol", PASSWORD, "ml-team", "ops", email="carol@uni.example")
    changed = only("membership.role_changed")
    assert (changed.actor_username, changed.changes) == ("carol", {"role": ["researcher",
                                                                            "admin"]})  # fmt: skip
    assert changed.note == "by a single sign-on rule"
    removed = only("membership.removed")
    assert (removed.target_label, removed.changes) == ("carol in infra (viewer)",
                                                       {"role": ["viewer", None]})  # fmt: skip


def test_the_rules_are_recorded(client_for, cluster_admin, team_a):
    client = client_for(cluster_admin)
    answer = client.post("/api/v1/sso/rules/", {"group": "ml", "project": "team-a",
                                                "role": "viewer"}, format="json")  # fmt: skip
    assert answer.status_code == 201, answer.content
    assert only("sso_rule.created").changes == {
        "group": [None, "ml"], "project": [None, "team-a"], "role": [None, "viewer"]}  # fmt: skip
    assert client.delete(f"/api/v1/sso/rules/{answer.json()['id']}/").status_code == 204
    deleted = only("sso_rule.deleted")
    assert (deleted.actor_username, deleted.target_label) == ("root", "ml -> viewer in team-a")
