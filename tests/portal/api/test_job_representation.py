"""A job's JSON is built without DRF's per-field machinery for the fields a row holds as JSON
values: it must stay exactly what DRF's own representation gives, for jobs in every state."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from rest_framework import serializers

from portal.api.serializers.jobs import JobSerializer
from portal.jobs.models import Job, JobType, Status
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db


def drf_representation(job: Job) -> dict:
    """What DRF's ModelSerializer itself shows (the project by name, as the API shows it)."""
    serializer = JobSerializer()
    data = serializers.ModelSerializer.to_representation(serializer, job)
    data["project"] = job.project.name
    return data


@pytest.fixture
def jobs(team_a, member) -> list[Job]:
    now = timezone.now()
    project = Project.objects.get(name="team-a")
    shapes = [
        {"status": Status.PENDING, "pending_reason": "waits for quota (R3)", "priority": None},
        {"status": Status.RUNNING, "started_at": now, "gpus": Decimal("0.5"), "priority": 7,
         "placement": [{"node": "dgx1-1", "devices": [3], "share": 0.5}], "ports": [8888],
         "service_type": "ingress", "type": JobType.INTERACTIVE, "user": member,
         "environment": {"SEED": "1", "EMPTY": ""}, "command": ["python", "-c", "print(1)"],
         "args": ["--lr", "0.1"], "volumes": [{"pvc": "data", "mount_path": "/data",
                                               "read_only": True}],
         "expected_s": 3600, "expected_basis": "burst", "eta": now + timedelta(hours=1)},
        {"status": Status.SUCCEEDED, "started_at": now - timedelta(hours=2),
         "finished_at": now - timedelta(minutes=5), "gpus": 2, "pods": 4, "stuck": True,
         "estimate_s": 7200, "sim_duration_s": 60, "image": "python:3.11"},
        {"status": Status.CONTAINER_CREATING, "started_at": now, "gpus": 8,
         "placement": [{"node": "n1", "devices": list(range(8))}]},
    ]  # fmt: skip
    return [
        Job.objects.create(project=project, name=f"job-{i}", **{"gpus": 1, **shape})
        for i, shape in enumerate(shapes)
    ]


def test_every_job_shows_exactly_what_drf_would_show(jobs):
    for job in Job.objects.select_related("project", "user").order_by("id"):
        fast = JobSerializer(job).data
        assert fast == drf_representation(job), job.name
        assert list(fast) == list(drf_representation(job))  # the same keys, in the same order


def test_a_list_of_jobs_shows_the_same_as_each_job_alone(jobs):
    listed = JobSerializer(Job.objects.select_related("project", "user"), many=True).data
    assert [dict(item) for item in listed] == [drf_representation(job) for job in jobs]


def test_listing_more_jobs_asks_the_database_nothing_more(api, member, team_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    project = Project.objects.get(name="team-a")
    client = api(member)

    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/api/v1/jobs/?project=team-a").status_code == 200
        return len(queries.captured_queries)

    Job.objects.create(project=project, name="one", gpus=1, user=member)
    few = statements()
    for i in range(20):
        Job.objects.create(project=project, name=f"more-{i}", gpus=1, user=member,
                           status=Status.RUNNING, started_at=timezone.now(),
                           placement=[{"node": "n1", "devices": [i % 8]}])  # fmt: skip
    assert statements() == few  # no column fetched one job at a time
