"""Stop, resume and delete are three actions (issue 23): a stopped job stays, frees its GPUs and
is never planned until resumed; resume queues the same spec again; delete removes it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from portal.jobs.models import Job, JobEvent, Status
from portal.jobs.services import delete_job, resume_job, stop_job, submit_job

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def full(cluster):
    """One 8-GPU node, team-a (quota 8) running `big` (8 GPUs) while `next` (8 GPUs) waits."""
    cluster.node("dgx1-1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "big", 8, sim_duration_s=10_000)
    cluster.submit("team-a", "next", 8, sim_duration_s=10_000)
    cluster.settle()
    assert cluster.job("team-a", "big").status == Status.RUNNING
    assert cluster.job("team-a", "next").status == Status.PENDING
    return cluster


def kinds(job: Job) -> list[str]:
    """The job's event kinds in the order written (the cycle's clock is frozen ahead of now)."""
    return list(JobEvent.objects.filter(job=job).order_by("id").values_list("kind", flat=True))


def test_a_stopped_job_frees_its_gpus_and_is_never_planned_until_resumed(full, agent):
    stopped = stop_job(full.job("team-a", "big"))
    assert stopped.status == Status.STOPPED and stopped.placement == []
    assert stopped.finished_at is not None and stopped.held_gpu_s >= 0
    full.settle()
    assert full.job("team-a", "next").status == Status.RUNNING  # took the freed GPUs
    assert full.job("team-a", "big").status == Status.STOPPED
    assert ("team-a", "big") not in agent.observe().jobs  # the cycle stopped its pods
    full.delete("team-a", "next")
    full.settle()
    assert full.job("team-a", "big").status == Status.STOPPED  # room, but it is not planned
    assert kinds(full.job("team-a", "big"))[-1] == "stopped"


def test_resume_queues_the_same_spec_again_and_its_wait_counts_from_the_resume(full, agent):
    stop_job(full.job("team-a", "big"))
    full.settle()
    before = timezone.now()
    resumed = resume_job(full.job("team-a", "big"))
    assert resumed.status == Status.PENDING and resumed.started_at is None
    assert resumed.queued_at >= before and resumed.finished_at is None
    assert resumed.gpus == 8 and resumed.sim_duration_s == 10_000  # the same spec
    full.delete("team-a", "next")
    full.settle()
    job = full.job("team-a", "big")
    assert job.status == Status.RUNNING
    assert kinds(job)[-4:] == ["stopped", "resumed", "scheduled", "running"]


def test_a_stopped_job_keeps_its_name_taken_until_it_is_deleted(full):
    stop_job(full.job("team-a", "big"))
    team_a = full.job("team-a", "big").project
    with pytest.raises(Exception, match="already exists"):
        submit_job(None, team_a, name="big", gpus=1)
    delete_job(full.job("team-a", "big"))
    assert not Job.objects.filter(name="big").exists()
    assert JobEvent.objects.filter(job_name="big", kind="deleted").exists()  # events outlive it
    assert submit_job(None, team_a, name="big", gpus=1).status == Status.PENDING


def test_only_an_active_job_stops_and_only_a_stopped_job_resumes(full):
    with pytest.raises(Exception, match="only a Stopped job is resumed"):
        resume_job(full.job("team-a", "big"))
    stop_job(full.job("team-a", "next"))  # a pending job stops before it ever ran
    with pytest.raises(Exception, match="is Stopped; only a pending or running job"):
        stop_job(full.job("team-a", "next"))
