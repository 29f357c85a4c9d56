"""Job health policies and "extend" over REST (Step 8)."""

import pytest

from portal.scheduling.settle import settle

pytestmark = pytest.mark.django_db


def test_policies_are_project_fields_with_named_errors(api, cluster_admin, team_a, nodes):
    client = api(cluster_admin)
    body = {"training_max_runtime_s": 7200, "train_idle_timeout_s": 1800, "idle_threshold": 0.02}
    ok = client.patch("/api/v1/projects/team-a/", body, format="json")
    assert ok.status_code == 200, ok.content
    assert (ok.json()["training_max_runtime_s"], ok.json()["idle_threshold"]) == (7200, 0.02)
    bad = client.patch("/api/v1/projects/team-a/", {"idle_threshold": 1.5}, format="json")
    assert bad.status_code == 400 and "idle_threshold" in bad.json()
    zero = client.patch("/api/v1/projects/team-a/", {"training_max_runtime_s": 0}, format="json")
    assert zero.status_code == 400 and "training_max_runtime_s" in zero.json()


def test_a_project_admin_sets_health_policies_but_not_the_quota(api, owner):
    client = api(owner)
    assert client.patch("/api/v1/projects/team-a/", {"train_idle_timeout_s": 600},
                        format="json").status_code == 200  # fmt: skip
    assert client.patch("/api/v1/projects/team-a/", {"quota": 9},
                        format="json").status_code == 403  # fmt: skip


def test_extend_once_when_the_project_allows_it(api, member, cluster_admin, nodes):
    client = api(member)
    client.post("/api/v1/jobs/", {"project": "team-a", "name": "j", "gpus": 1}, format="json")
    settle()
    refused = client.post("/api/v1/jobs/team-a/j/extend/")
    assert refused.status_code == 409 and "does not allow extensions" in str(refused.json())
    api(cluster_admin).patch("/api/v1/projects/team-a/", {"timeout_extension_s": 900},
                             format="json")  # fmt: skip
    first = client.post("/api/v1/jobs/team-a/j/extend/")
    assert first.status_code == 200, first.content
    again = client.post("/api/v1/jobs/team-a/j/extend/")
    assert again.status_code == 409 and "extended once already" in str(again.json())
    kinds = [e["kind"] for e in client.get("/api/v1/jobs/team-a/j/events/").json()["results"]]
    assert kinds.count("extended") == 1
