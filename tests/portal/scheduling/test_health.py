"""Job health policies with a frozen clock (Step 8): each fires exactly at its threshold, not a
second before, the job ends TimedOut with an event naming the policy and the figures, and its
GPUs go to the next job in the same cycle; a warning comes first; extending works once."""

from __future__ import annotations

import pytest

from agents import simulated
from portal.jobs import services
from portal.jobs.models import JobEvent, Status
from portal.tenancy.models import Department, Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def utilization(monkeypatch):
    """Per-job synthetic utilization: `utilization["job"] = 0.0` makes that job's GPUs idle."""
    values: dict[str, float] = {}
    real = simulated.device_utilization

    def fake(job, device, now):
        return values[job.name] if job.name in values else real(job, device, now)

    monkeypatch.setattr(simulated, "device_utilization", fake)
    return values


def events(name: str, kind: str) -> list[str]:
    return list(JobEvent.objects.filter(job_name=name, kind=kind).values_list("message", flat=True))


def test_training_maximum_run_time_fires_at_its_threshold_and_frees_the_gpus(cluster, clock):
    cluster.node("n1", 2)
    cluster.project("team-a", 2, training_max_runtime_s=3600)
    cluster.submit("team-a", "long", gpus=2)
    cluster.settle()
    cluster.submit("team-a", "next", gpus=2)  # waits for long's GPUs
    clock.advance(2699)
    cluster.cycle()
    assert not events("long", "warning")
    clock.advance(1)  # 15 minutes before the end
    cluster.cycle()
    assert events("long", "warning") == [
        "warning: the maximum run time of 3600 s ends this job in 900 s"]  # fmt: skip
    clock.advance(899)
    cluster.cycle()
    assert cluster.job("team-a", "long").status == Status.RUNNING
    assert len(events("long", "warning")) == 1  # warned once
    clock.advance(1)
    result = cluster.cycle()
    long = cluster.job("team-a", "long")
    assert long.status == Status.TIMED_OUT and long.placement == [] and long.finished_at
    assert events("long", "timed out") == [
        "timed out: maximum run time of 3600 s reached (ran 3600 s)"]  # fmt: skip
    assert [(d.kind, d.job[1]) for d in result.decisions] == [("start", "next")]  # same cycle


def test_an_interactive_job_ends_at_its_projects_time_limit(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, interactive_time_limit_s=600)
    cluster.submit("team-a", "nb", gpus=1, type="interactive")
    cluster.settle()
    clock.advance(599)
    cluster.cycle()
    assert cluster.job("team-a", "nb").status == Status.RUNNING
    clock.advance(1)
    cluster.cycle()
    assert cluster.job("team-a", "nb").status == Status.TIMED_OUT
    assert "interactive time limit of 600 s reached (ran 600 s)" in events("nb", "timed out")[0]


def test_idle_gpus_end_a_job_after_the_idle_timeout_and_busy_gpus_reset_it(
    cluster, clock, utilization
):
    cluster.node("n1", 2)
    cluster.project("team-a", 2, train_idle_timeout_s=600, timeout_warning_s=60)
    cluster.submit("team-a", "sleepy", gpus=1)
    cluster.settle()
    utilization["sleepy"] = 0.005  # under the default 1 %
    cluster.cycle()
    idle_from = cluster.job("team-a", "sleepy").idle_since
    assert idle_from == clock.now
    clock.advance(300)
    utilization["sleepy"] = 0.5  # it woke up: the clock starts again
    cluster.cycle()
    assert cluster.job("team-a", "sleepy").idle_since is None
    utilization["sleepy"] = 0.0
    cluster.cycle()
    clock.advance(599)
    cluster.cycle()
    assert cluster.job("team-a", "sleepy").status == Status.RUNNING
    assert events("sleepy", "warning")  # 60 s before
    clock.advance(1)
    cluster.cycle()
    assert cluster.job("team-a", "sleepy").status == Status.TIMED_OUT
    assert events("sleepy", "timed out") == [
        "timed out: idle GPU timeout of 600 s (under 1% utilization) reached "
        "(GPUs idle for 600 s, utilization now 0.0%)"]  # fmt: skip


def test_unknown_utilization_is_never_called_idle(cluster, clock, monkeypatch):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, train_idle_timeout_s=60)
    cluster.submit("team-a", "j", gpus=1)
    cluster.settle()
    monkeypatch.setattr(type(cluster.agent), "_job_utilization", lambda self, job, now: None)
    for _ in range(3):
        clock.advance(60)
        cluster.cycle()
    job = cluster.job("team-a", "j")
    assert job.status == Status.RUNNING and job.idle_since is None


def test_extending_moves_the_deadline_once_and_a_new_warning_comes(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, training_max_runtime_s=1000, timeout_warning_s=100,
                    timeout_extension_s=500)  # fmt: skip
    cluster.submit("team-a", "j", gpus=1)
    cluster.settle()
    clock.advance(900)
    cluster.cycle()
    assert len(events("j", "warning")) == 1
    services.extend_job(cluster.job("team-a", "j"), None)
    assert "end 500 s later (once)" in events("j", "extended")[0]
    with pytest.raises(Exception, match="extended once already"):
        services.extend_job(cluster.job("team-a", "j"), None)
    clock.advance(100)  # the old deadline
    cluster.cycle()
    assert cluster.job("team-a", "j").status == Status.RUNNING
    clock.advance(399)
    cluster.cycle()
    assert len(events("j", "warning")) == 1
    clock.advance(1)  # 100 s before the new deadline
    cluster.cycle()
    assert len(events("j", "warning")) == 2
    assert "extend once" not in events("j", "warning")[1]
    clock.advance(100)
    cluster.cycle()
    assert cluster.job("team-a", "j").status == Status.TIMED_OUT
    assert "maximum run time of 1000 s, extended by 500 s reached (ran 1500 s)" in events(
        "j", "timed out")[0]  # fmt: skip


def test_a_project_without_extensions_says_so(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, training_max_runtime_s=1000)
    cluster.submit("team-a", "j", gpus=1)
    cluster.settle()
    with pytest.raises(Exception, match="does not allow extensions"):
        services.extend_job(cluster.job("team-a", "j"), None)


def test_projects_inherit_their_departments_policies_and_may_override_them(cluster, clock):
    research = Department.objects.create(name="research", quota=4, training_max_runtime_s=100)
    cluster.node("n1", 2)
    cluster.project("team-a", 1, department=research)
    cluster.project("team-b", 1, department=research, training_max_runtime_s=200)
    cluster.submit("team-a", "a", gpus=1)
    cluster.submit("team-b", "b", gpus=1)
    cluster.settle()
    clock.advance(100)
    cluster.cycle()
    assert cluster.job("team-a", "a").status == Status.TIMED_OUT
    assert cluster.job("team-b", "b").status == Status.RUNNING
    clock.advance(100)
    cluster.cycle()
    assert cluster.job("team-b", "b").status == Status.TIMED_OUT
    assert Project.objects.get(name="team-a").training_max_runtime_s is None


def test_with_every_policy_off_nothing_is_ever_timed_out(cluster, clock, utilization):
    cluster.node("n1", 1)
    cluster.project("team-a", 1)
    cluster.submit("team-a", "j", gpus=1, type="interactive")
    cluster.settle()
    utilization["j"] = 0.0
    for _ in range(5):
        clock.advance(86400)
        cluster.cycle()
    assert cluster.job("team-a", "j").status == Status.RUNNING
    assert not JobEvent.objects.filter(kind__in=["warning", "timed out"]).exists()


def run_until(cluster, clock, until_s: float, every_s: float = 10) -> None:
    """Cycles every `every_s` of frozen time until `until_s` after now."""
    end = clock.now.timestamp() + until_s
    while clock.now.timestamp() + every_s <= end:
        clock.advance(every_s)
        cluster.cycle()


def test_a_training_job_without_output_is_flagged_stuck_then_stopped(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, stuck_after_s=300, stuck_stop_after_s=600,
                    timeout_warning_s=60)  # fmt: skip
    cluster.submit("team-a", "hung", gpus=1, environment={"ALLOT_SIM_HANG_AFTER_S": "60"})
    cluster.settle()  # starts at t=0; its log stops growing at t=60 (simulated hang)
    run_until(cluster, clock, 350)  # t=350: quiet for 290 s
    assert not cluster.job("team-a", "hung").stuck
    run_until(cluster, clock, 10)  # t=360: quiet for 300 s
    hung = cluster.job("team-a", "hung")
    assert hung.stuck and hung.status == Status.RUNNING
    assert events("hung", "stuck") == [
        "stuck: no new output or progress for 300 s; it is stopped 600 s later unless it moves"
    ]
    run_until(cluster, clock, 540)  # t=900: one warning 60 s before the stop
    assert len(events("hung", "warning")) == 1
    run_until(cluster, clock, 50)  # t=950
    assert cluster.job("team-a", "hung").status == Status.RUNNING
    clock.advance(10)  # t=960 = 60 + 300 + 600
    cluster.cycle()
    assert cluster.job("team-a", "hung").status == Status.TIMED_OUT
    assert events("hung", "timed out") == [
        "timed out: stuck-job stop after 900 s without output or progress reached "
        "(no output or progress for 900 s)"]  # fmt: skip


def test_a_job_that_keeps_writing_is_never_stuck(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1, stuck_after_s=60, stuck_stop_after_s=60)
    cluster.submit("team-a", "busy", gpus=1)
    cluster.settle()
    run_until(cluster, clock, 600)
    busy = cluster.job("team-a", "busy")
    assert busy.status == Status.RUNNING and not busy.stuck


def test_restarting_pods_make_a_job_stuck_at_once_and_recovery_clears_the_flag():
    from datetime import UTC, datetime

    from portal.jobs.health import HealthPolicy, JobHealth, judge

    now = datetime(2026, 11, 1, tzinfo=UTC)
    policy = HealthPolicy(stuck_after_s=3600)
    looping = JobHealth("train", now, None, "", 0, active_at=now, restarts=3)
    verdict = judge(looping, policy, 0.5, now)
    assert verdict.stuck is True and "restarted 3 times" in verdict.stuck_message
    recovered = JobHealth("train", now, None, "", 0, active_at=now, stuck=True, restarts=0)
    assert judge(recovered, policy, 0.5, now).stuck is False
    notebook = JobHealth("interactive", now, None, "", 0, active_at=now, restarts=5)
    assert judge(notebook, policy, 0.5, now).stuck is None  # stuck is for training jobs
