"""The migrations of issue 33 (memory in bytes) on real PostgreSQL, from the historical models:
every MiB stored so far becomes bytes exactly and comes back as it was; a byte amount that is
not whole MiB goes back rounded as it was stored before (a request up, a node down). And issue
26's 0016, which filled earlier runs from their jobs, run in its own historical state (it reads
columns issue 33 renamed, so it can no longer run against today's models)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)
MIB, GIB = 2**20, 2**30
BEFORE = [("jobs", "0019_external_workloads"), ("cluster", "0004_outside_pods"),
          ("tenancy", "0009_project_namespaces")]  # fmt: skip
AFTER = [("jobs", "0020_memory_in_bytes"), ("cluster", "0005_memory_in_bytes"),
         ("tenancy", "0010_memory_in_bytes")]  # fmt: skip
NOW = datetime(2026, 11, 28, 12, tzinfo=UTC)


def migrate(targets):
    """The database at `targets`, and the models as they were there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


@pytest.fixture
def back_to_latest():
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def test_stored_mib_become_bytes_exactly_and_come_back(back_to_latest):
    old = migrate(BEFORE)
    dept = old.get_model("tenancy", "Department").objects.create(
        name="dept-d", quota=4, memory_limit_mib=2048
    )
    project = old.get_model("tenancy", "Project").objects.create(
        name="team-a", quota=4, department=dept, memory_limit_mib=65536, default_memory_mib=1536
    )
    old.get_model("cluster", "Node").objects.create(
        name="n1", gpus=8, gpu_memory_mib=40960, memory_mib=190
    )
    job = old.get_model("jobs", "Job").objects.create(
        project=project,
        name="j",
        gpus=1,
        pods=2,
        memory_mib=48,
        memory_limit_mib=20480,
        gpu_memory_mib=None,
    )
    old.get_model("jobs", "Job").objects.create(
        project=project, name="frac", gpus=0.5, memory_mib=1, gpu_memory_mib=16384
    )
    old.get_model("jobs", "JobRun").objects.create(
        job=job,
        project=project,
        job_name="j",
        job_type="train",
        number=1,
        started_at=NOW,
        gpus=2,
        memory_mib=96,
    )
    old.get_model("jobs", "UsageSample").objects.create(
        project=project, time=NOW, allocated_memory_mib=3 * 2**31
    )  # past 2**31 MiB: bigint
    old.get_model("jobs", "UsageRollup").objects.create(
        project=project, resolution_s=300, bucket=NOW, samples=2, memory_mib_sum=1.5)  # fmt: skip

    new = migrate(AFTER)
    assert new.get_model("tenancy", "Department").objects.get().memory_limit_bytes == 2 * GIB
    project = new.get_model("tenancy", "Project").objects.get()
    assert (project.memory_limit_bytes, project.default_memory_bytes) == (64 * GIB, 1536 * MIB)
    node = new.get_model("cluster", "Node").objects.get()
    assert (node.gpu_memory_bytes, node.memory_bytes) == (40 * GIB, 190 * MIB)
    jobs = {j.name: j for j in new.get_model("jobs", "Job").objects.all()}
    assert (jobs["j"].memory_bytes, jobs["j"].memory_limit_bytes) == (48 * MIB, 20 * GIB)
    assert (jobs["frac"].memory_bytes, jobs["frac"].gpu_memory_bytes) == (MIB, 16 * GIB)
    assert jobs["j"].gpu_memory_bytes is None
    assert new.get_model("jobs", "JobRun").objects.get().memory_bytes == 96 * MIB
    sample = new.get_model("jobs", "UsageSample").objects.get()
    assert sample.allocated_memory_bytes == 3 * 2**31 * MIB
    assert new.get_model("jobs", "UsageRollup").objects.get().memory_bytes_sum == 1.5 * MIB

    # what Kubernetes writes, kept to the byte: a pod of 50M, a node of 200M
    new.get_model("jobs", "Job").objects.filter(name="j").update(memory_bytes=50 * 10**6)
    new.get_model("cluster", "Node").objects.update(memory_bytes=200 * 10**6)
    old = migrate(BEFORE)
    job = old.get_model("jobs", "Job").objects.get(name="j")
    assert (job.memory_mib, job.memory_limit_mib, job.gpu_memory_mib) == (48, 20480, None)
    node = old.get_model("cluster", "Node").objects.get()
    assert (node.gpu_memory_mib, node.memory_mib) == (40960, 190)  # 200M rounded down
    project = old.get_model("tenancy", "Project").objects.get()
    assert (project.memory_limit_mib, project.default_memory_mib) == (65536, 1536)
    assert old.get_model("jobs", "UsageRollup").objects.get().memory_mib_sum == 1.5


def test_0016_gives_earlier_runs_their_jobs_requests(back_to_latest):
    old = migrate([("jobs", "0015_usage_cpu_memory"), *BEFORE[1:]])
    project = old.get_model("tenancy", "Project").objects.create(name="team-a", quota=4)
    job = old.get_model("jobs", "Job").objects.create(
        project=project,
        name="j",
        gpus=1,
        pods=2,
        cpu_millis=2000,
        memory_mib=8192,
        status="Running",
    )
    runs = old.get_model("jobs", "JobRun")
    run = runs.objects.create(
        job=job, project=project, job_name="j", job_type="train", number=1, started_at=NOW, gpus=2
    )
    orphan = runs.objects.create(
        job=None,
        project=project,
        job_name="gone",
        job_type="train",
        number=1,
        started_at=NOW,
        gpus=2,
    )  # its job was deleted
    new = migrate([("jobs", "0016_run_cpu_memory"), *BEFORE[1:]])
    runs = new.get_model("jobs", "JobRun").objects
    assert (runs.get(id=run.id).cpu_millis, runs.get(id=run.id).memory_mib) == (4000, 16384)
    assert (runs.get(id=orphan.id).cpu_millis, runs.get(id=orphan.id).memory_mib) == (0, 0)
