"""What the hot routes cost per request (issue 39): the job list, a job and a submission ask
the database only what their answer needs, and build no serializer fields per request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework import serializers

from portal.api.serializers.jobs import JobSerializer
from portal.jobs.models import Job, Status
from portal.tenancy import token_cache

pytestmark = pytest.mark.django_db


def statements(client, path: str) -> list[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    return [query["sql"] for query in queries.captured_queries]


def test_a_list_whose_texts_name_no_job_reads_no_project_names(
    api, member, team_a, team_b, monkeypatch
):
    monkeypatch.setattr(token_cache, "SHARED", True)  # a Redis-backed portal keeps the token
    Job.objects.create(project=team_a, name="waits", gpus=1, user=member,
                       pending_reason="waits for quota (R3)")  # fmt: skip
    sql = statements(api(member), "/api/v1/jobs/?project=team-a")
    # the page with its count, one query (portal.api.pagination; the token was read when the
    # client was made, and is kept: portal.tenancy.token_cache): the names of every project are
    # read only to hide another project's job named in a text (portal.jobs.redaction)
    assert len(sql) == 1, sql


def test_a_text_naming_another_projects_job_is_still_hidden(api, member, team_a, team_b):
    Job.objects.create(project=team_a, name="moved", gpus=1, user=member,
                       pending_reason="preempted so team-b/secret-x can start (R9)")  # fmt: skip
    answer = api(member).get("/api/v1/jobs/team-a/moved/").json()
    assert answer["pending_reason"] == "preempted so another project's job can start (R9)"


def test_showing_jobs_builds_no_serializer_fields(team_a, member, monkeypatch):
    Job.objects.create(project=team_a, name="one", gpus=1, user=member, status=Status.PENDING)
    assert JobSerializer(Job.objects.select_related("project", "user"), many=True).data  # warm
    built = []
    original = serializers.ModelSerializer.get_fields
    monkeypatch.setattr(serializers.ModelSerializer, "get_fields",
                        lambda self: built.append(type(self)) or original(self))  # fmt: skip
    jobs = Job.objects.select_related("project", "user")
    assert JobSerializer(jobs, many=True).data[0]["name"] == "one"
    assert JobSerializer(jobs[0]).data["name"] == "one"
    assert built == []  # DRF would deep-copy some forty fields for each serializer


def test_a_submission_reads_no_node_and_no_other_project(api, member, team_a, team_b, nodes):
    with CaptureQueriesContext(connection) as queries:
        answer = api(member).post("/api/v1/jobs/", {"project": "team-a", "name": "one", "gpus": 1},
                                  format="json")  # fmt: skip
    assert answer.status_code == 201, answer.content
    sql = [query["sql"] for query in queries.captured_queries]
    # the largest node and the totals are one aggregate; whether the job can ever start reads
    # its project and department, not the cluster's every node and project
    assert [q for q in sql if 'FROM "cluster_node"' in q and "MAX(" not in q] == []
    assert not [q for q in sql if 'FROM "tenancy_project"' in q and "WHERE" not in q]


def test_a_submission_builds_no_model_fields_and_binds_fields_of_its_own(
    api, member, team_a, nodes, monkeypatch
):
    client = api(member)
    job = {"project": "team-a", "name": "first", "gpus": 1, "command": ["a"], "volumes": []}
    assert client.post("/api/v1/jobs/", job, format="json").status_code == 201  # warm
    built = []
    original = serializers.ModelSerializer.get_fields
    monkeypatch.setattr(serializers.ModelSerializer, "get_fields",
                        lambda self: built.append(type(self)) or original(self))  # fmt: skip
    answer = client.post("/api/v1/jobs/", job | {"name": "second"}, format="json")
    assert answer.status_code == 201, answer.content
    assert built == []  # DRF would build them from the model's fields for each request
    one, two = JobSerializer().fields, JobSerializer().fields
    assert all(one[name] is not two[name] for name in one)
    assert one["name"].parent is not two["name"].parent
    # a bad body is refused as before, field by field
    refused = client.post("/api/v1/jobs/", job | {"name": "Bad_Name", "command": [1]},
                          format="json").json()  # fmt: skip
    assert set(refused) == {"command"}  # JSON types first, as StrictTypesMixin checks them


def test_a_submission_locks_and_counts_in_one_query_each_and_reads_its_projects_limits_only(
    api, member, team_a, team_b, nodes, monkeypatch
):
    """Issue 39: the user's and the project's advisory locks are one statement, the pending
    caps one count, and the never-starts check reads the user limits of its own project."""
    monkeypatch.setattr(token_cache, "SHARED", True)
    client = api(member)
    job = {"project": "team-a", "name": "first", "gpus": 1}
    assert client.post("/api/v1/jobs/", job, format="json").status_code == 201  # warm
    with CaptureQueriesContext(connection) as queries:
        answer = client.post("/api/v1/jobs/", job | {"name": "second"}, format="json")
    assert answer.status_code == 201, answer.content
    sql = [query["sql"] for query in queries.captured_queries]
    assert sum("pg_advisory_xact_lock" in q for q in sql) == 1
    assert sum("COUNT(" in q and 'FROM "jobs_job"' in q for q in sql) == 1
    limits = [q for q in sql if 'FROM "tenancy_userlimit"' in q]
    assert limits and all("WHERE" in q for q in limits), limits
    assert len(sql) <= 13, sql  # 15 before
