"""A job that can never start under its project's or department's limit is answered at submit
with a warning naming the limit (issue 34 item 6: 20 cores in a project limited to 16, and 40
where the department allows 32, were accepted without a word). Accepted, not refused, as KAI
and Kueue keep such a job pending: limits are an admin's to raise."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job
from portal.tenancy.models import Department

URL = "/api/v1/jobs/"


@pytest.fixture
def client(api, member, nodes):
    return api(member)


def warned(client, **fields) -> list[str]:
    body = {"project": "team-a", "name": "big", "gpus": 1, **fields}
    response = client.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert Job.objects.filter(name=body["name"], status="Pending").exists()
    return response.json()["warnings"]


def test_more_cores_than_the_projects_cpu_limit(client, team_a):
    team_a.cpu_limit_millis = 16000
    team_a.save()
    [warning] = warned(client, cpu="20")
    assert warning.startswith("never starts as submitted: would exceed team-a's CPU limit of "
                              "16 cores")  # fmt: skip
    assert "20 cores requested" in warning and "until the limit or quota is raised" in warning
    job = Job.objects.get(name="big")  # its expected start says so too, from the start
    assert job.expected_start.startswith("cannot start: would exceed team-a's CPU limit")


def test_more_cores_than_the_departments_cpu_limit(client, team_a):
    team_a.department = Department.objects.create(name="research", quota=8,
                                                  cpu_limit_millis=32000)  # fmt: skip
    team_a.save()
    [warning] = warned(client, cpu="20", pods=2)  # 40 cores in all
    assert "research's CPU limit of 32 cores" in warning and "40 cores requested" in warning


def test_more_memory_than_the_projects_memory_limit(client, team_a):
    team_a.memory_limit_bytes = 64 * 2**30
    team_a.save()
    [warning] = warned(client, memory="80Gi")
    assert "team-a's memory limit of 64 GiB" in warning


def test_more_gpus_than_the_projects_gpu_limit(client, team_a):
    team_a.limit = 4
    team_a.save()
    [warning] = warned(client, gpus=3, pods=2)
    assert "more than team-a's limit of 4 GPUs" in warning


def test_an_interactive_job_above_the_quota(client):
    [warning] = warned(client, gpus=5, type="interactive")  # team-a's quota is 4
    assert "interactive jobs may not exceed team-a's quota" in warning


def test_a_job_within_every_limit_has_no_warning(client, team_a):
    team_a.cpu_limit_millis, team_a.memory_limit_bytes, team_a.limit = 16000, 64 * 2**30, 8
    team_a.save()
    assert warned(client, cpu="8", memory="32Gi", gpus=4, pods=2) == []  # all of each
