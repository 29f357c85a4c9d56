"""One cycle end to end on PostgreSQL: snapshot -> plan -> commit -> agent, and what it records."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from portal.jobs.models import Job, JobEvent, Status, UsageSample
from portal.scheduling import snapshot
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db


def test_a_pending_job_is_started_then_seen_running_by_the_next_cycle(cluster, clock):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    cluster.submit("team-a", "train-1", gpus=2)
    first = cluster.cycle()
    job = cluster.job("team-a", "train-1")
    assert [d.kind for d in first.decisions] == ["start"]
    assert job.status == Status.CONTAINER_CREATING and job.started_at == clock.now
    assert len(job.placement) == 1 and len(job.placement[0]["devices"]) == 2
    assert cluster.agent.observe().jobs[("team-a", "train-1")].phase == "Running"
    second = cluster.cycle()
    assert [c.new_status for c in second.transitions] == [Status.RUNNING]
    assert cluster.job("team-a", "train-1").status == Status.RUNNING
    kinds = list(JobEvent.objects.filter(job_name="train-1").values_list("kind", flat=True))
    assert kinds == ["submitted", "scheduled", "running"]


def test_the_snapshot_reads_rows_as_the_schedulers_dataclasses(cluster):
    cluster.node("a100-1", 4, pool="a100")
    cluster.project("team-a", 2.5, over_quota_weight=1, limit=6, node_pools=["a100"])
    cluster.submit("team-a", "frac", gpus=0.25, type="interactive", priority=3)
    state = snapshot.load()
    (node,) = state.nodes
    (project,) = state.projects
    (job,) = state.jobs
    assert (node.name, node.gpus, node.pool, node.ready) == ("a100-1", 4, "a100", True)
    assert (project.quota, project.over_quota_weight, project.limit) == (2.5, 1.0, 6.0)
    assert project.node_pools == ("a100",) and project.order == state.project_rows["team-a"].id
    assert (job.gpus, job.type, job.priority, job.placement) == (0.25, "interactive", 3, ())
    assert job.order == state.rows[job.key].id and isinstance(job.gpus, float)


def test_the_pending_reason_and_the_fair_share_are_stored_for_the_api(cluster):
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "big", gpus=4)
    cluster.cycle()
    job = cluster.job("team-a", "big")
    assert job.status == Status.PENDING and "(R" in job.pending_reason
    assert Project.objects.get(name="team-a").fair_share == pytest.approx(2.0)


@pytest.mark.parametrize("step", [1, 3, 5])
def test_tr4858_reaches_the_reports_tables_through_the_database(cluster, step):
    """TR-4858 §4.8-4.10 with rows, conditional commits and the agent (FORMAT.md settling)."""
    from tests.portal.scheduling.conftest import load_scenario

    scenario = load_scenario("tr4858.json")
    for node in scenario["nodes"]:
        cluster.node(node["name"], node["gpus"])
    for project in scenario["projects"]:
        cluster.project(project["name"], project["quota"])
    for number, action in enumerate(scenario["steps"][: step + 1]):
        for job in action.get("submit", []):
            fields = {k: v for k, v in job.items() if k in ("type", "image", "ports") and v}
            cluster.submit(job["project"], job["name"], job["gpus"], **fields)
            cluster.settle()
        for job in action.get("delete", []):
            cluster.delete(job["project"], job["name"])
            cluster.settle()
        if number == step:
            expect = action["expect"]
            allocated = cluster.allocated()
            assert {p: allocated.get(p, 0) for p in expect["allocated"]} == expect["allocated"]
            pending = cluster.pending()
            assert {p: pending.get(p, 0) for p in expect["pending_count"]} == expect[
                "pending_count"
            ]


def test_an_evicted_job_returns_to_pending_with_an_event_citing_the_rule(cluster):
    cluster.node("n1", 4)
    cluster.project("team-c", 0)
    cluster.project("team-d", 4)
    for i in range(4):
        cluster.submit("team-c", f"c-{i}", gpus=1)
    cluster.settle()
    assert cluster.allocated() == {"team-c": 4.0}
    Job.objects.update(expected_end=1e12)  # the running jobs' outlooks (B1), as eta.refresh writes
    cluster.submit("team-d", "d-1", gpus=2)
    cluster.settle()
    assert cluster.allocated() == {"team-c": 2.0, "team-d": 2.0}
    # The evicted jobs' outlooks were about runs that ended; the new start has none yet.
    ends = dict(Job.objects.values_list("name", "expected_end"))
    assert ends == {"c-0": 1e12, "c-1": 1e12, "c-2": None, "c-3": None, "d-1": None}
    evicted = JobEvent.objects.filter(kind="evicted")
    assert evicted.count() == 2 and all("(R" in e.message for e in evicted)
    names = sorted(e.job_name for e in evicted)
    assert names == ["c-2", "c-3"]  # newest first (R8.1)
    assert all(cluster.job("team-c", n).status == Status.PENDING for n in names)
    assert not any(("team-c", n) in cluster.agent.observe().jobs for n in names)


def test_a_job_with_sim_duration_succeeds_and_its_gpus_go_to_the_next_job(cluster, clock):
    cluster.node("n1", 1)
    cluster.project("team-a", 1)
    cluster.submit("team-a", "short", gpus=1, sim_duration_s=60)
    cluster.submit("team-a", "next", gpus=1)
    cluster.settle()
    assert cluster.job("team-a", "next").status == Status.PENDING
    clock.advance(60)
    result = cluster.cycle()
    assert [(c.job[1], c.new_status) for c in result.transitions] == [("short", "Succeeded")]
    assert [d.job[1] for d in result.decisions] == ["next"]
    short = cluster.job("team-a", "short")
    assert short.placement == [] and short.finished_at == clock.now
    assert ("team-a", "short") not in cluster.agent.observe().jobs


def test_an_interactive_job_past_its_projects_time_limit_is_stopped_with_an_event(cluster, clock):
    cluster.node("n1", 2)
    cluster.project("team-a", 2, interactive_time_limit_s=3600)
    cluster.submit("team-a", "notebook", gpus=1, type="interactive")
    cluster.submit("team-a", "trainer", gpus=1)
    cluster.settle()
    clock.advance(3599)
    cluster.cycle()
    assert cluster.job("team-a", "notebook").status == Status.RUNNING
    clock.advance(1)
    cluster.cycle()
    notebook = cluster.job("team-a", "notebook")
    assert notebook.status == Status.TIMED_OUT and notebook.placement == []
    stopped = JobEvent.objects.get(kind="timed out")
    assert "interactive time limit of 3600 s reached" in stopped.message
    assert cluster.job("team-a", "trainer").status == Status.RUNNING  # train jobs have no limit


def test_a_deleted_job_is_stopped_on_the_agent_by_the_next_cycle(cluster):
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "gone", gpus=1)
    cluster.settle()
    cluster.delete("team-a", "gone")
    cluster.cycle()
    assert cluster.agent.observe().jobs == {}


def test_a_restarted_process_rebuilds_its_agent_from_the_database(cluster, clock):
    from agents.simulated import SimulatedAgent

    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    cluster.submit("team-a", "long", gpus=4, sim_duration_s=600)
    cluster.submit("team-a", "forever", gpus=2)
    cluster.settle()
    clock.advance(100)
    before = cluster.agent.observe()
    cluster.agent = SimulatedAgent(start_delay_s=0, clock=clock)  # the process died
    result = cluster.cycle()
    assert result.decisions == () and result.transitions == ()
    assert cluster.agent.observe() == before
    clock.advance(500)
    cluster.cycle()
    assert cluster.job("team-a", "long").status == Status.SUCCEEDED


def test_usage_samples_are_written_once_per_project_at_most_every_interval(
    cluster, clock, settings
):
    settings.ALLOT_USAGE_SAMPLE_INTERVAL_S = 10
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    cluster.project("team-b", 4)
    cluster.submit("team-a", "a", gpus=3)
    cluster.settle()
    cluster.cycle()
    assert UsageSample.objects.count() == 2
    clock.advance(10)
    cluster.cycle()
    latest = UsageSample.objects.filter(project__name="team-a").latest("time")
    assert (latest.allocated_gpus, latest.running_jobs, latest.pending_jobs) == (3.0, 1, 0)
    assert latest.simulated and 0.55 <= latest.utilization <= 0.97
    assert UsageSample.objects.count() == 4


def test_each_committed_change_publishes_the_overview_to_its_group(cluster, monkeypatch):
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from portal.scheduling import publish

    monkeypatch.setattr(publish, "MIN_INTERVAL_S", 0)
    cache.delete(publish.STATE_KEY)
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("overview", channel)
    cluster.node("n1", 2)
    cluster.project("team-a", 2)
    cluster.submit("team-a", "a", gpus=1)
    cluster.cycle()
    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "overview.updated"
    assert message["overview"]["cluster"]["gpus"] == 2


def test_the_overview_goes_out_at_most_once_a_second_and_owed_changes_follow(monkeypatch):
    from portal.scheduling import publish

    sent, now = [], [100.0]
    monkeypatch.setattr(publish, "_send", lambda: sent.append(now[0]) or True)
    monkeypatch.setattr(publish, "clock", lambda: now[0])
    cache.delete(publish.STATE_KEY)
    assert publish.publish_overview(changed=True)
    assert publish.owed_in() is None
    now[0] += 0.5
    assert not publish.publish_overview(changed=True)  # too soon: owed
    assert publish.owed_in() == 0.5  # the embedded timer and the Celery task come back then
    assert not publish.publish_overview(changed=False)
    now[0] += 0.5
    assert publish.owed_in() == 0.0
    assert publish.publish_overview(changed=False)  # the owed change goes out
    assert publish.owed_in() is None
    now[0] += 3.9
    assert not publish.publish_overview(changed=False)  # nothing new, nothing sent
    now[0] += 1.1
    assert publish.publish_overview(changed=False)  # REFRESH_S on: utilization moves
    assert sent == [100.0, 101.0, 106.0]


def test_a_slow_overview_build_stretches_the_interval_to_five_times_its_cost(monkeypatch):
    from portal.scheduling import publish

    now = [100.0]

    def slow_send():
        now[0] += 0.4  # building and sending took 0.4 s
        return True

    monkeypatch.setattr(publish, "_send", slow_send)
    monkeypatch.setattr(publish, "clock", lambda: now[0])
    cache.delete(publish.STATE_KEY)
    assert publish.publish_overview(changed=True)
    now[0] = 101.5  # 1.5 s after the last send began: over MIN_INTERVAL_S, under 5 x 0.4 s
    assert not publish.publish_overview(changed=True)
    now[0] = 102.1
    assert publish.publish_overview(changed=False)  # the owed change goes out


def test_a_jupyter_session_past_the_time_limit_is_stopped_with_its_server(
    clock, make_sessions, session_python
):
    """The session's server process ends in the cycle that applies the limit (frozen clock)."""
    from pathlib import Path

    from agents.simulated import SimulatedAgent
    from tests.portal.scheduling.conftest import Cluster

    sleeper = (session_python, "-c", "import time; time.sleep(120)")  # stands in for JupyterLab
    sessions = make_sessions(command=sleeper)
    cluster = Cluster(SimulatedAgent(start_delay_s=0, clock=clock, sessions=sessions))
    cluster.node("n1", 2)
    cluster.project("team-a", 2, interactive_time_limit_s=600)
    cluster.submit("team-a", "nb", gpus=0.5, type="interactive", ports=[8888])
    cluster.cycle()
    server = sessions.get("team-a", "nb")
    assert server is not None
    clock.advance(599)
    cluster.cycle()
    assert sessions.get("team-a", "nb") is not None
    clock.advance(1)
    cluster.cycle()
    assert cluster.job("team-a", "nb").status == Status.TIMED_OUT
    assert "interactive time limit of 600 s" in JobEvent.objects.get(kind="timed out").message
    assert sessions.get("team-a", "nb") is None
    stat = Path(f"/proc/{server.pid}/stat")
    assert not stat.exists() or stat.read_text().split(")")[-1].split()[0] == "Z"
