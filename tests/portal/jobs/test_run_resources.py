"""Issue 26: a run keeps the CPU and memory it held (per pod x pods), as it keeps its GPUs, so
the accounting can add them up after the job is gone."""

from __future__ import annotations

import importlib
from datetime import timedelta

import pytest
from django.apps import apps
from django.utils import timezone

from portal.jobs import services
from portal.jobs.models import Job, JobRun, Status

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
    held = {run.job_name: (run.cpu_millis, run.memory_mib) for run in JobRun.objects.all()}
    assert held == {"gang": (3000, 6144), "cpu-only": (4000, 512), "plain": (0, 0)}

    services.delete_job(Job.objects.get(name="gang"), cluster_admin)
    run = JobRun.objects.get(job_name="gang")
    assert run.job_id is None and (run.cpu_millis, run.memory_mib) == (3000, 6144)


def test_a_run_made_from_a_job_copies_them(member, team_a):
    job = Job.objects.create(project=team_a, name="j", gpus=2, pods=3, cpu_millis=500,
                             memory_mib=1024, user=member, status=Status.RUNNING)  # fmt: skip
    run = JobRun.objects.create(job=job, number=1, started_at=timezone.now(), gpus=6)
    assert (run.cpu_millis, run.memory_mib) == (1500, 3072)


def test_the_migration_gives_earlier_runs_their_jobs_requests(member, team_a):
    migration = importlib.import_module("portal.jobs.migrations.0016_run_cpu_memory")
    now = timezone.now()
    job = Job.objects.create(project=team_a, name="j", gpus=1, pods=2, cpu_millis=2000,
                             memory_mib=8192, user=member, status=Status.RUNNING)  # fmt: skip
    run = JobRun.objects.create(job=job, number=1, started_at=now - timedelta(hours=1), gpus=2)
    orphan = JobRun.objects.create(job=job, number=2, started_at=now, gpus=2)
    JobRun.objects.filter(id=orphan.id).update(job=None)  # its job was deleted: nothing to read
    JobRun.objects.update(cpu_millis=0, memory_mib=0)  # as the column's default left them

    migration.from_jobs(apps, None)

    run.refresh_from_db()
    orphan.refresh_from_db()
    assert (run.cpu_millis, run.memory_mib) == (4000, 16384)
    assert (orphan.cpu_millis, orphan.memory_mib) == (0, 0)
