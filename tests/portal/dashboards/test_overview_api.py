"""GET /api/v1/overview/: the tiles, bars, tables and nodes of the overview page, per viewer."""

import pytest

from portal.cluster import metrics
from portal.dashboards.overview import build_full_overview, overview_for
from portal.scheduling.settle import settle

pytestmark = pytest.mark.django_db


def submit(client, project, name, gpus, **fields):
    body = {"project": project, "name": name, "gpus": gpus, **fields}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content


@pytest.fixture
def busy(api, cluster_admin, nodes, team_a, team_b):
    """team-a: 2 GPUs + a half GPU running; team-b: 6 GPUs running (4 over quota) and 8 waiting."""
    admin = api(cluster_admin)
    submit(admin, "team-a", "a-two", 2)
    submit(admin, "team-a", "a-half", 0.5, type="interactive")
    submit(admin, "team-b", "b-six", 6)
    submit(admin, "team-b", "b-nine", 8)
    settle()
    return admin


def test_the_tiles_count_nodes_gpus_allocated_and_jobs(busy):
    cluster = busy.get("/api/v1/overview/").json()["cluster"]
    assert (cluster["nodes"], cluster["gpus"], cluster["allocated_gpus"]) == (2, 16, 8.5)
    assert (cluster["running_jobs"], cluster["pending_jobs"]) == (3, 1)
    assert cluster["idle_allocated_gpus"] == 0  # simulated jobs run at 55..97 %
    assert 0 < cluster["utilization"] <= 8.5 / 16 and cluster["utilization_simulated"]


def test_each_project_shows_allocated_quota_over_quota_and_fair_share(busy):
    projects = {p["name"]: p for p in busy.get("/api/v1/overview/").json()["projects"]}
    assert (projects["team-b"]["allocated_gpus"], projects["team-b"]["quota"]) == (6, 2)
    assert projects["team-b"]["over_quota_gpus"] == 4
    assert projects["team-a"]["over_quota_gpus"] == 0
    assert projects["team-a"]["fair_share"] > 0


def test_pending_jobs_carry_their_queue_position_and_the_schedulers_reason(busy, api):
    submit(busy, "team-b", "b-later", 8)
    settle()
    pending = {j["name"]: j for j in busy.get("/api/v1/overview/").json()["pending"]}
    assert (pending["b-nine"]["queue_position"], pending["b-later"]["queue_position"]) == (1, 2)
    assert pending["b-nine"]["queue_length"] == 2
    assert "R" in pending["b-nine"]["pending_reason"]  # the rule the scheduler cited


def test_an_interactive_job_is_ahead_of_older_training_in_its_queue(busy):
    """R4.3 with R7.1: the build class (interactive) has the higher priority."""
    submit(busy, "team-b", "b-notebook", 8, type="interactive")
    settle()
    pending = {j["name"]: j for j in busy.get("/api/v1/overview/").json()["pending"]}
    assert pending["b-notebook"]["queue_position"] == 1


def test_running_jobs_show_nodes_run_time_and_simulated_utilization(busy):
    running = {j["name"]: j for j in busy.get("/api/v1/overview/").json()["running"]}
    job = running["a-half"]
    assert job["nodes"] and job["run_s"] >= 0 and job["allocated_gpus"] == 0.5
    assert 0.55 <= job["utilization"] <= 0.97 and job["utilization_simulated"]


def test_nodes_show_fractions_device_by_device(busy):
    nodes = busy.get("/api/v1/overview/").json()["nodes"]
    shares = sorted(d["allocated"] for n in nodes for d in n["devices"] if d["allocated"])
    assert shares == [0.5] + [1.0] * 8
    assert sum(n["allocated_gpus"] for n in nodes) == 8.5


def test_a_viewer_sees_the_cluster_but_only_their_projects_jobs(busy, api, viewer):
    body = api(viewer).get("/api/v1/overview/").json()
    assert body["cluster"]["allocated_gpus"] == 8.5
    assert [p["name"] for p in body["projects"]] == ["team-a"]
    names = {j["name"] for j in body["running"] + body["pending"]}
    assert names == {"a-two", "a-half"}
    device_jobs = [j for n in body["nodes"] for d in n["devices"] for j in d["jobs"]]
    assert {j["name"] for j in device_jobs} == {"a-two", "a-half", None}
    assert "b-six" not in str(body) and "team-b" not in str(body)


def test_utilization_is_unknown_rather_than_invented_without_an_observation(busy):
    from django.core.cache import cache

    cache.delete(metrics.KEY)
    body = busy.get("/api/v1/overview/").json()
    assert body["cluster"]["utilization"] is None
    assert all(j["utilization"] is None for j in body["running"])


def test_overview_for_all_is_the_full_view_capped(busy):
    full = build_full_overview()
    assert overview_for(full, None)["running"] == full["running"]
    assert overview_for(full, frozenset())["running"] == []


def test_the_triage_panels_list_idle_and_troubled_jobs(busy, api, viewer, monkeypatch):
    from agents import simulated
    from portal.jobs.models import Job, Status

    real = simulated.device_utilization
    monkeypatch.setattr(
        simulated, "device_utilization",
        lambda job, device, now: 0.0 if job.name == "a-two" else real(job, device, now),
    )  # fmt: skip
    settle()
    Job.objects.filter(name="b-six").update(status=Status.TIMED_OUT, finished_at=Job.objects.get(
        name="b-six").submitted_at, placement=[])  # fmt: skip
    attention = busy.get("/api/v1/overview/").json()["attention"]
    assert [job["name"] for job in attention["idle"]] == ["a-two"]
    assert [job["name"] for job in attention["troubled"]] == ["b-six"]
    mine = api(viewer).get("/api/v1/overview/").json()["attention"]
    assert [job["name"] for job in mine["idle"]] == ["a-two"] and mine["troubled"] == []
