"""External workloads over REST (issue 33): namespaces mapped to projects, each to one; the
job answer says what made a workload; a person cannot delete a live one (its owner does), and a
researcher of another project sees none of it."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job, Status

pytestmark = pytest.mark.django_db


def external_job(project, name="train-x", status=Status.PENDING) -> Job:
    return Job.objects.create(
        project=project, name=name, gpus=1, pods=4, status=status, external_uid=f"uid-{name}",
        external_kind="Job", external_owner=name, external_namespace=f"allot-{project.name}",
    )  # fmt: skip


def test_an_admin_maps_a_namespace_to_one_project_only(api, cluster_admin, team_a, team_b):
    client = api(cluster_admin)
    answer = client.patch("/api/v1/projects/team-a/", {"namespaces": ["research"]}, format="json")
    assert answer.status_code == 200 and answer.json()["namespaces"] == ["research"]
    taken = client.patch("/api/v1/projects/team-b/", {"namespaces": ["research"]}, format="json")
    assert taken.status_code == 400
    assert taken.json()["namespaces"] == ["namespace research already belongs to project team-a"]
    own = client.patch("/api/v1/projects/team-b/", {"namespaces": ["allot-team-a"]}, format="json")
    assert own.json()["namespaces"] == ["namespace allot-team-a already belongs to project team-a"]
    bad = client.patch("/api/v1/projects/team-b/", {"namespaces": ["Not_A_Name"]}, format="json")
    assert bad.status_code == 400 and "namespaces" in bad.json()


def test_a_project_admin_does_not_map_namespaces(api, owner, team_a):
    answer = api(owner).patch("/api/v1/projects/team-a/", {"namespaces": ["x"]}, format="json")
    assert answer.status_code in (400, 403)
    team_a.refresh_from_db()
    assert team_a.namespaces == []


def test_the_job_answer_says_what_made_it(api, member, team_a):
    external_job(team_a)
    job = api(member).get("/api/v1/jobs/team-a/train-x/").json()
    assert job["external"] == {"namespace": "allot-team-a", "kind": "Job", "owner": "train-x"}
    assert job["user"] is None and job["pods"] == 4


def test_a_live_external_workload_is_deleted_by_its_owner_not_through_allot(api, owner, team_a):
    external_job(team_a, status=Status.RUNNING)
    answer = api(owner).delete("/api/v1/jobs/team-a/train-x/")
    assert answer.status_code == 409
    assert "kubectl delete job train-x -n allot-team-a" in str(answer.json())
    assert Job.objects.filter(name="train-x").exists()


def test_another_projects_researcher_sees_no_external_workload(api, outsider, team_a):
    external_job(team_a)
    assert api(outsider).get("/api/v1/jobs/team-a/train-x/").status_code == 404
    assert api(outsider).get("/api/v1/jobs/team-a/train-x/logs/").status_code == 404
