"""Issue 26: a run keeps the CPU and memory it held (per pod x pods), as it keeps its GPUs, so
the accounting can add them up after the job is gone."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.jobs import services
from portal.jobs.models import Job, JobRun, Status
from scheduler.quantity import GIB

pytestmark = pytest.mark.django_db


def test_the_cycle_opens_runs_with_the_pods_cpu_and_memory(api, cluster_admin, nodes, team_a):
    from portal.scheduling.settle import settle

    client = api(cluster_admin)
    for body in (
        {
            "project": "team-a",
            "name": "gang",
            "gpus": 1,
            "pods": 2,
            "cpu": "1500m",
            "memory": "3Gi",
        },
        {"project": "team-a", "name": "cpu-only", "gpus": 0, "cpu": "4", "memory": "512Mi"},
        {"project": "team-a", "name": "plain", "gpus": 1},
    ):
        assert client.post("/api/v1/jobs/", body, format="json").status_code == 201, body
    settle()
    held = {run.job_name: (run.cpu_millis, run.memory_bytes) for run in JobRun.objects.all()}
    assert held == {"gang": (3000, 6 * GIB), "cpu-only": (4000, GIB // 2), "plain": (0, 0)}

    services.delete_job(Job.objects.get(name="gang"), cluster_admin)
    run = JobRun.objects.get(job_name="gang")
    assert run.job_id is None and (run.cpu_millis, run.memory_bytes) == (3000, 6 * GIB)


def test_a_run_made_from_a_job_copies_them(member, team_a):
    job = Job.objects.create(project=team_a, name="j", gpus=2, pods=3, cpu_millis=500,
                             memory_bytes=1 * GIB, user=member, status=Status.RUNNING)  # fmt: skip
    run = JobRun.objects.create(job=job, number=1, started_at=timezone.now(), gpus=6)
    assert (run.cpu_millis, run.memory_bytes) == (1500, 3 * GIB)
