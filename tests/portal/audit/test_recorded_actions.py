"""Each action the issue lists leaves one audit entry - who, from which address, what changed -
when driven through the REST API or the pages, as users do (issue 22)."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from portal.audit.models import AuditEntry
from portal.cluster.models import Node
from tests.portal.audit.conftest import entries, only

pytestmark = pytest.mark.django_db
ADDRESS = "198.51.100.7"
JOB = {"name": "train-1", "project": "team-a", "image": "pytorch:2", "gpus": 1}


def test_a_quota_change_records_before_and_after(client_for, cluster_admin, team_a):
    answer = client_for(cluster_admin).patch(
        "/api/v1/projects/team-a/", {"quota": 6, "limit": 10}, format="json"
    )
    assert answer.status_code == 200, answer.content
    entry = only("project.quota_changed")
    assert (entry.actor_username, entry.actor, entry.address) == ("root", cluster_admin, ADDRESS)
    assert (entry.target_type, entry.target_label) == ("project", "team-a")
    assert entry.changes == {"quota": [4, 6], "limit": [None, 10]}
    assert not entries("project.limits_changed")


def test_a_time_limit_change_is_a_limits_change(client_for, owner, team_a):
    answer = client_for(owner).patch(
        "/api/v1/projects/team-a/", {"interactive_time_limit_s": 3600}, format="json"
    )
    assert answer.status_code == 200, answer.content
    entry = only("project.limits_changed")
    assert entry.actor_username == "alice"
    assert entry.changes == {"interactive_time_limit_s": [None, 3600]}


def test_a_refused_change_records_nothing(client_for, cluster_admin, team_a):
    answer = client_for(cluster_admin).patch(
        "/api/v1/projects/team-a/", {"quota": 6, "limit": 2}, format="json"
    )
    assert answer.status_code == 400
    assert not AuditEntry.objects.filter(action__startswith="project.").exists()


def test_project_created_and_deleted(client_for, cluster_admin):
    client = client_for(cluster_admin)
    assert client.post("/api/v1/projects/", {"name": "team-z", "quota": 2},
                       format="json").status_code == 201  # fmt: skip
    assert only("project.created").changes["quota"] == [None, 2]
    assert client.delete("/api/v1/projects/team-z/").status_code == 204
    assert only("project.deleted").target_label == "team-z"


def test_members_added_and_removed(client_for, owner, member, team_a):
    client = client_for(owner)
    answer = client.post("/api/v1/projects/team-a/members/",
                         {"username": "root-less", "role": "viewer"}, format="json")  # fmt: skip
    assert answer.status_code in (400, 404)  # no such user: nothing recorded
    assert not entries("membership.added")
    assert client.delete("/api/v1/projects/team-a/members/bob/").status_code == 204
    removed = only("membership.removed")
    assert (removed.actor_username, removed.changes) == ("alice", {"role": ["researcher", None]})
    answer = client.post("/api/v1/projects/team-a/members/",
                         {"username": "bob", "role": "viewer"}, format="json")  # fmt: skip
    assert answer.status_code == 201, answer.content
    added = only("membership.added")
    assert added.changes == {"role": [None, "viewer"]}
    assert "bob" in added.target_label and "team-a" in added.target_label


def test_jobs_submitted_one_and_in_bulk_then_deleted(client_for, member, team_a, nodes):
    client = client_for(member)
    assert client.post("/api/v1/jobs/", JOB, format="json").status_code == 201
    entry = only("job.submitted")
    assert (entry.actor_username, entry.target_type, entry.target_label) == (
        "bob", "job", "team-a/train-1")  # fmt: skip
    sweep = [{**JOB, "name": f"sweep-{i}"} for i in range(3)]
    answer = client.post("/api/v1/jobs/bulk/", {"jobs": sweep}, format="json")
    assert answer.status_code == 201, answer.content
    labels = [e.target_label for e in entries("job.submitted")]
    assert labels == ["team-a/train-1", "team-a/sweep-0", "team-a/sweep-1", "team-a/sweep-2"]
    assert {e.address for e in entries("job.submitted")} == {ADDRESS}
    assert client.delete("/api/v1/jobs/team-a/sweep-1/").status_code in (200, 202, 204)
    deleted = only("job.deleted")
    assert (deleted.actor_username, deleted.target_label) == ("bob", "team-a/sweep-1")


def test_node_cordoned_on_the_page_and_changed_over_rest(client, cluster_admin, nodes):
    client.force_login(cluster_admin)
    answer = client.post("/nodes/dgx1-1/", {"action": "cordon"}, REMOTE_ADDR="203.0.113.5")
    assert answer.status_code == 302
    entry = only("node.changed")
    assert (entry.actor_username, entry.address) == ("root", "203.0.113.5")
    assert (entry.target_label, entry.changes) == ("dgx1-1", {"schedulable": [True, False]})
    client.patch("/api/v1/nodes/dgx1-2/", {"pool": "a100"}, content_type="application/json")
    assert entries("node.changed")[-1].changes == {"pool": ["default", "a100"]}
    assert Node.objects.get(name="dgx1-2").pool == "a100"


def test_users_created_and_passwords_set(client, client_for, cluster_admin):
    answer = client_for(cluster_admin).post(
        "/api/v1/users/", {"username": "carol", "password": "a-long-passphrase-9"}, format="json"
    )
    assert answer.status_code == 201, answer.content
    created = only("user.created")
    assert (created.target_label, created.changes["is_staff"]) == ("carol", [None, False])
    client.force_login(cluster_admin)
    client.post("/users/carol/password/", {"password": "another-passphrase-7"})
    changed = only("user.changed")
    assert changed.changes == {"password": ["(hidden)", "(new)"]}  # never the password itself
    assert "passphrase" not in str(AuditEntry.objects.values_list("changes", "note"))


def test_webhooks_and_notification_settings(client, owner, team_a):
    client.force_login(owner)
    client.post("/projects/team-a/webhooks/", {"url": "https://hooks.example.com/allot"})
    assert only("webhook.created").changes["url"] == [None, "https://hooks.example.com/allot"]
    client.post("/me/", {"action": "notifications", "browser": "on"})
    setting = only("setting.changed")
    assert (setting.actor_username, setting.changes) == ("alice", {"email": [True, False]})


def test_what_no_request_did_is_the_systems(db):
    call_command("bootstrap", verbosity=0)
    admin = only("user.created")
    assert (admin.actor_username, admin.actor, admin.address) == ("system", None, None)


def test_an_edit_in_djangos_admin_is_recorded(client, cluster_admin, nodes):
    client.force_login(cluster_admin)
    node = nodes[0]
    form = {
        "name": node.name,
        "gpus": 8,
        "gpu_memory_bytes": 32 * 2**30,
        "pool": "default",
        "ready": "on",
        "gpu_product": "",
        "_save": "Save",
    }  # schedulable unticked: a cordon
    answer = client.post(f"/admin/cluster/node/{node.pk}/change/", form,
                         REMOTE_ADDR="203.0.113.8")  # fmt: skip
    assert answer.status_code == 302, answer.content[:2000]
    entry = only("node.changed")
    assert (entry.actor_username, entry.address) == ("root", "203.0.113.8")
    assert (entry.target_type, entry.target_id, entry.target_label) == (
        "node", str(node.pk), "dgx1-1")  # fmt: skip
    assert "Schedulable" in entry.note and "Django's admin" in entry.note


def test_jobs_stopped_and_resumed(client_for, member, team_a, nodes):
    client = client_for(member)
    assert client.post("/api/v1/jobs/", JOB, format="json").status_code == 201
    answer = client.post("/api/v1/jobs/team-a/train-1/stop/")
    assert answer.status_code == 200, answer.content
    stopped = only("job.stopped")
    assert (stopped.actor_username, stopped.target_label, stopped.address) == (
        "bob", "team-a/train-1", ADDRESS)  # fmt: skip
    assert stopped.changes == {"status": ["Pending", "Stopped"]}
    assert client.post("/api/v1/jobs/team-a/train-1/resume/").status_code == 200
    assert only("job.resumed").changes == {"status": ["Stopped", "Pending"]}
    assert client.delete("/api/v1/jobs/team-a/train-1/").status_code in (200, 202, 204)
    assert only("job.deleted").changes == {"status": ["Pending", None]}


def test_a_role_changed_in_djangos_admin_is_recorded_with_before_and_after(
    client, cluster_admin, member, team_a
):
    client.force_login(cluster_admin)
    membership = member.memberships.get()
    form = {"user": member.pk, "project": team_a.pk, "role": "viewer", "source": "local",
            "_save": "Save"}  # fmt: skip
    answer = client.post(f"/admin/tenancy/membership/{membership.pk}/change/", form)
    assert answer.status_code == 302, answer.content[:3000]
    entry = only("membership.role_changed")
    assert (entry.actor_username, entry.changes) == ("root", {"role": ["researcher", "viewer"]})
    assert "bob" in entry.target_label and "team-a" in entry.target_label
