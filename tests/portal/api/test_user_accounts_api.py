"""Issue 24 item 6 over REST, as on the Users page: a cluster admin deactivates, promotes and
deletes accounts (PATCH/DELETE /api/v1/users/{username}/), never their own nor the last admin."""

from __future__ import annotations

from django.contrib.auth import get_user_model

from portal.jobs import services as jobs
from portal.jobs.models import Job


def test_an_admin_deactivates_and_promotes_a_user(api, cluster_admin, member):
    bob = api(member)
    answer = api(cluster_admin).patch("/api/v1/users/bob/", {"is_active": False}, format="json")
    assert answer.status_code == 200 and answer.json()["is_active"] is False
    assert bob.get("/api/v1/projects/").status_code == 401  # the token stops working
    answer = api(cluster_admin).patch("/api/v1/users/bob/", {"is_staff": True}, format="json")
    assert answer.json()["is_staff"] is True
    assert get_user_model().objects.get(username="bob").is_superuser


def test_nobody_changes_their_own_account_or_removes_the_last_admin(api, cluster_admin):
    me = api(cluster_admin)
    refused = me.patch(f"/api/v1/users/{cluster_admin.username}/", {"is_staff": False},
                       format="json")  # fmt: skip
    assert refused.status_code == 409 and "yourself" in refused.json()["username"][0]
    assert me.delete(f"/api/v1/users/{cluster_admin.username}/").status_code == 409
    assert get_user_model().objects.get(username=cluster_admin.username).is_staff


def test_a_deleted_users_jobs_stay(api, cluster_admin, member):
    jobs.submit_job(member, member.memberships.get().project, name="kept", type="train", gpus=1)
    assert api(cluster_admin).delete("/api/v1/users/bob/").status_code == 204
    assert Job.objects.get(name="kept").user is None


def test_researchers_may_not_change_accounts(api, member, owner):
    assert api(member).patch("/api/v1/users/alice/", {"is_active": False},
                             format="json").status_code == 403  # fmt: skip
    assert get_user_model().objects.get(username="alice").is_active
