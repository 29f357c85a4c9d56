"""GET /api/v1/audit/: cluster admins only, filtered, paginated, and as CSV with the same rows
(issue 22)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.audit.queries import CSV_COLUMNS
from portal.audit.services import new_entry, record

pytestmark = pytest.mark.django_db
AUDIT = "/api/v1/audit/"


@pytest.fixture
def admin(client_for, cluster_admin):
    """A cluster admin's client (signing in is the log's first entry)."""
    return client_for(cluster_admin)


@pytest.fixture
def log(admin, cluster_admin, member):
    """Five entries: a member's, a cluster admin's, a stranger's and the system's."""
    made = [
        record("auth.login", member, actor=member),
        record("job.submitted", ("job", "1", "team-a/train-1"), actor=member),
        record("project.quota_changed", ("project", "1", "team-a"), actor=cluster_admin,
               changes={"quota": [4, 6]}),
        record("auth.login_failed", ("user", "", "mallory"), username="mallory"),
        record("node.changed", ("node", "1", "dgx1-1"), changes={"schedulable": [True, False]}),
    ]  # fmt: skip
    return made


def _ids(answer) -> list[int]:
    assert answer.status_code == 200, answer.content
    return [row["id"] for row in answer.json()["results"]]


@pytest.mark.parametrize("persona", ["owner", "member", "viewer"])
def test_only_cluster_admins_read_it(client_for, request, log, persona):
    user = request.getfixturevalue(persona)
    answer = client_for(user).get(AUDIT)
    assert answer.status_code == 403
    assert client_for(user).get(AUDIT, {"format": "csv"}).status_code == 403


def test_anonymous_clients_are_refused(client_for, log):
    assert client_for(None).get(AUDIT).status_code in (401, 403)


def test_newest_first_with_who_address_and_changes(admin, log):
    rows = admin.get(AUDIT).json()
    assert rows["count"] == 6
    assert [(row["action"], row["actor"]) for row in rows["results"]] == [
        ("node.changed", "system"), ("auth.login_failed", "mallory"),
        ("project.quota_changed", "root"), ("job.submitted", "bob"), ("auth.login", "bob"),
        ("auth.login", "root")]  # the admin signing in first  # fmt: skip
    quota = rows["results"][2]
    assert (quota["actor"], quota["target_label"], quota["changes"]) == (
        "root", "team-a", {"quota": [4, 6]})  # fmt: skip


@pytest.mark.parametrize(
    ("params", "actions"),
    [({"actor": "bob"}, ["job.submitted", "auth.login"]),
     ({"action": "auth."}, ["auth.login_failed", "auth.login", "auth.login"]),
     ({"action": "auth.login"}, ["auth.login_failed", "auth.login", "auth.login"]),
     ({"action": "auth.login_"}, ["auth.login_failed"]),
     ({"target": "TEAM-A"}, ["project.quota_changed", "job.submitted"]),
     ({"target_type": "node"}, ["node.changed"]),
     ({"actor": "mallory", "action": "auth."}, ["auth.login_failed"])],
)  # fmt: skip
def test_filters(admin, log, params, actions):
    rows = admin.get(AUDIT, params).json()["results"]
    assert [row["action"] for row in rows] == actions


def test_since_until_and_address(client_for, cluster_admin, member):
    client = client_for(cluster_admin, "192.0.2.50")
    client.patch("/api/v1/projects/team-a/", {"quota": 5}, format="json")  # from that address
    old = new_entry("job.submitted", ("job", "9", "team-a/old"), actor=member)
    old.time = timezone.now() - timedelta(days=10)
    old.save()
    now, hour = timezone.now(), timedelta(hours=1)
    assert _ids(client.get(AUDIT, {"until": (now - hour).isoformat()})) == [old.id]
    assert old.id not in _ids(client.get(AUDIT, {"since": (now - hour).isoformat()}))
    assert len(_ids(client.get(AUDIT, {"since": (now - hour).isoformat()}))) == 2
    day = old.time.date().isoformat()  # a date: from its start (since) to its end (until)
    assert _ids(client.get(AUDIT, {"since": day, "until": day})) == [old.id]
    (quota,) = client.get(AUDIT, {"address": "192.0.2.50"}).json()["results"]
    assert (quota["action"], quota["address"]) == ("project.quota_changed", "192.0.2.50")
    assert _ids(client.get(AUDIT, {"address": "192.0.2.51"})) == []


@pytest.mark.parametrize(
    ("params", "field"),
    [({"since": "yesterday"}, "since"), ({"until": "2026-13-01"}, "until"),
     ({"address": "not-an-ip"}, "address")],
)  # fmt: skip
def test_a_bad_filter_is_a_400_naming_it(admin, log, params, field):
    answer = admin.get(AUDIT, params)
    assert answer.status_code == 400
    assert list(answer.json()) == [field]


def test_pages(admin, log):
    client = admin
    first = client.get(AUDIT, {"page_size": 2}).json()
    second = client.get(first["next"]).json()
    assert len(first["results"]) == len(second["results"]) == 2
    assert not {r["id"] for r in first["results"]} & {r["id"] for r in second["results"]}


def test_the_csv_has_the_apis_rows(admin, log):
    client = admin
    for params in ({}, {"action": "auth."}, {"actor": "root"}, {"actor": "nobody"}):
        answer = client.get(AUDIT, {**params, "format": "csv"})
        assert answer.status_code == 200
        assert answer["Content-Type"].startswith("text/csv")
        assert answer["Content-Disposition"].startswith('attachment; filename="allot-audit-')
        rows = list(csv.reader(io.StringIO(b"".join(answer.streaming_content).decode())))
        assert rows[0] == CSV_COLUMNS
        api = client.get(AUDIT, params).json()["results"]
        assert [
            [r["time"], r["actor"], r["address"] or "", r["action"], r["target_type"],
             r["target_id"], r["target_label"], json.dumps(r["changes"], sort_keys=True),
             r["note"]]
            for r in api
        ] == [row[:1] and [_iso(row[0]), *row[1:]] for row in rows[1:]]  # fmt: skip


def _iso(text: str) -> str:
    """The CSV's time as DRF writes it (UTC as `Z`)."""
    return text.replace("+00:00", "Z")


def test_a_bad_filter_in_the_csv_is_a_400_too(admin, log):
    answer = admin.get(AUDIT, {"format": "csv", "since": "soon"})
    assert answer.status_code == 400
    assert b"since" in answer.content
