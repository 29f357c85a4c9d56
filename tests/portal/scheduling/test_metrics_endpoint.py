"""`/metrics`: only for ALLOT_METRICS_TOKEN, and its figures are the overview's and the cycles'."""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from portal.dashboards.overview import build_full_overview
from portal.jobs.models import Status
from portal.scheduling import cycle_metrics

pytestmark = pytest.mark.django_db
TOKEN = "metrics-test-token-0123456789"


@pytest.fixture
def scrape(settings):
    settings.ALLOT_METRICS_TOKEN = TOKEN

    def get() -> dict[tuple[str, tuple], float]:
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        assert response.status_code == 200, response.content
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.content.decode())
            for sample in family.samples
        }

    return get


def test_metrics_are_off_without_a_token_and_refuse_a_missing_or_wrong_one(settings):
    settings.ALLOT_METRICS_TOKEN = None
    assert Client().get("/metrics").status_code == 404
    settings.ALLOT_METRICS_TOKEN = TOKEN
    missing = Client().get("/metrics")
    assert missing.status_code == 401 and b"ALLOT_METRICS_TOKEN" in missing.content
    assert missing["WWW-Authenticate"].startswith("Bearer")
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer not-the-token")
    assert wrong.status_code == 403 and b"not ALLOT_METRICS_TOKEN" in wrong.content
    assert b"allot_project" not in missing.content + wrong.content


def test_project_gauges_equal_the_overview(cluster, scrape):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    cluster.project("team-b", 2)
    cluster.submit("team-a", "train-1", gpus=3, cpu_millis=2000, memory_bytes=1024**3)
    cluster.submit("team-b", "big", gpus=16)  # never fits: stays pending
    cluster.cycle()
    samples = scrape()
    rows = {row["name"]: row for row in build_full_overview()["projects"]}

    def gauge(name: str, project: str, pool: str | None = None) -> float:
        pooled = () if pool is None else (("node_pool", pool),)
        return samples[(name, (*pooled, ("project", project)))]

    assert (gauge("allot_project_allocated_gpus", "team-a", "default")
            == rows["team-a"]["allocated_gpus"] == 3)  # fmt: skip
    assert gauge("allot_project_quota_gpus", "team-b") == 2
    assert gauge("allot_project_fair_share_gpus", "team-a") == rows["team-a"]["fair_share"]
    assert gauge("allot_project_allocated_cpu_cores", "team-a", "default") == 2.0
    assert gauge("allot_project_allocated_memory_bytes", "team-a", "default") == 1024**3
    assert gauge("allot_project_running_jobs", "team-a", "default") == 1
    assert gauge("allot_project_pending_jobs", "team-b") == 1
    assert cluster.job("team-b", "big").status == Status.PENDING
    assert gauge("allot_project_oldest_pending_seconds", "team-b") >= 0
    assert gauge("allot_project_oldest_pending_seconds", "team-a") == 0
    assert gauge("allot_job_submissions_total", "team-a") == 1
    cluster.submit("team-a", "train-2", gpus=1)
    assert scrape()[("allot_job_submissions_total", (("project", "team-a"),))] == 2


def test_what_projects_hold_is_split_by_node_pool_as_the_overview_splits_it(cluster, scrape):
    cluster.node("a1", 4, pool="a100")
    cluster.node("v1", 8, pool="v100")
    cluster.project("team-a", 8)  # any pool
    cluster.project("team-b", 4, node_pools=["v100"])
    cluster.submit("team-a", "gang", gpus=4, pods=2, cpu_millis=1000)  # 4 + 4: both pools
    cluster.submit("team-b", "one", gpus=2)
    cluster.cycle()
    rows = {row["name"]: row for row in build_full_overview()["projects"]}
    pools = {name: {p["pool"]: p for p in row["pools"]} for name, row in rows.items()}
    assert sorted(pools["team-a"]) == ["a100", "v100"] and sorted(pools["team-b"]) == ["v100"]
    assert {p: pools["team-a"][p]["allocated_gpus"] for p in ("a100", "v100")} == {
        "a100": 4, "v100": 4,
    }  # fmt: skip
    samples = scrape()

    def gauge(name: str, project: str, pool: str) -> float:
        return samples[(name, (("node_pool", pool), ("project", project)))]

    for project, pool in (("team-a", "a100"), ("team-a", "v100"), ("team-b", "v100")):
        row = pools[project][pool]
        assert gauge("allot_project_allocated_gpus", project, pool) == row["allocated_gpus"]
        assert gauge("allot_project_allocated_cpu_cores", project, pool) == (
            row["allocated_cpu_millis"] / 1000
        )
    assert gauge("allot_project_allocated_gpus", "team-b", "v100") == 2
    assert gauge("allot_project_allocated_cpu_cores", "team-a", "a100") == 1.0
    running = [gauge("allot_project_running_jobs", "team-a", p) for p in ("a100", "v100")]
    assert sorted(running) == [0, 1]  # the gang counts once, where its first pod runs
    assert ("allot_project_allocated_gpus", (("node_pool", "a100"), ("project", "team-b"))) not in (
        samples
    )  # team-b may not use the a100 pool


def test_cycle_histogram_and_evictions_add_up_over_cycles(cluster, scrape):
    cache.clear()
    cluster.node("n1", 4)
    cluster.project("team-a", 0)
    cluster.project("team-b", 4)
    cluster.submit("team-a", "borrower", gpus=4)
    cluster.cycle()
    cluster.cycle()
    cluster.submit("team-b", "owner", gpus=4)
    reclaim = cluster.cycle()
    assert [d.kind for d in reclaim.decisions].count("evict") == 1
    samples = scrape()
    done = cycle_metrics.summary()["cycles"]
    count = samples[("allot_cycle_stage_duration_seconds_count", (("stage", "plan"),))]
    assert count == done == 3
    inf = samples[
        ("allot_cycle_stage_duration_seconds_bucket", (("le", "+Inf"), ("stage", "plan")))
    ]
    assert inf == 3
    assert samples[("allot_cycles_total", (("status", "done"),))] == 3
    assert samples[("allot_cycle_decisions_total", (("kind", "start"),))] >= 1
    (action,) = {d.action for d in reclaim.decisions if d.kind == "evict"}
    assert samples[("allot_evictions_total", (("reason", action),))] == 1


def test_start_latency_is_a_histogram_of_each_jobs_first_start(cluster, scrape, clock):
    cache.clear()
    cluster.node("n1", 4)
    cluster.project("team-a", 0)
    cluster.project("team-b", 4)
    cluster.submit("team-a", "borrower", gpus=4)
    clock.advance(40)  # the first cycle comes 40 s (+ the clock's lead) after the submission
    cluster.cycle()
    borrower = cluster.job("team-a", "borrower")
    waited = (borrower.runs.get(number=1).started_at - borrower.submitted_at).total_seconds()
    assert 40 < waited < 120
    cluster.submit("team-b", "owner", gpus=4)

    def cycle():
        clock.advance(1)  # every cycle sees its own time, as it does outside tests
        cluster.cycle()

    cycle()  # team-b reclaims its quota: the borrower is evicted...
    cycle()
    assert cluster.job("team-b", "owner").status != Status.PENDING
    cluster.delete("team-b", "owner")
    cycle()
    cycle()  # ...and started again: not a first start
    assert cluster.job("team-a", "borrower").runs.count() == 2
    samples = scrape()

    def series(name: str, project: str, le: str | None = None) -> float:
        labels = (("le", le), ("project", project)) if le else (("project", project),)
        return samples[(f"allot_job_start_latency_seconds_{name}", labels)]

    assert series("count", "team-a") == 1 and series("count", "team-b") == 1
    assert series("sum", "team-a") == pytest.approx(waited, abs=1e-3)
    assert series("bucket", "team-a", "30.0") == 0 and series("bucket", "team-a", "120.0") == 1
    assert series("bucket", "team-a", "+Inf") == 1


def test_request_latency_is_labelled_by_route_name_not_path(scrape, cluster_admin):
    client = Client()
    client.force_login(cluster_admin)
    client.get("/healthz/")
    samples = scrape()
    key = ("route", "healthz")
    counts = [v for (name, labels), v in samples.items()
              if name == "allot_http_request_duration_seconds_count" and key in labels]  # fmt: skip
    assert counts and counts[0] >= 1
    assert not any("/healthz/" in str(labels) for _, labels in samples)


def test_budgets_are_exported_as_the_budget_pages_measure_them(scrape, django_user_model):
    """Issue 36: budgets as Prometheus metrics, in seconds, from the same runs as the pages."""
    from datetime import timedelta
    from decimal import Decimal

    from django.utils import timezone

    from portal.budgets.models import Budget
    from portal.jobs.models import Job, JobRun, JobType
    from portal.tenancy.models import Project

    team_a = Project.objects.create(name="team-a", quota=4)
    ada = django_user_model.objects.create_user("ada")
    end = timezone.now() - timedelta(hours=1)
    job = Job.objects.create(project=team_a, name="j1", gpus=2, user=ada, type=JobType.TRAIN,
                             status=Status.SUCCEEDED, cpu_millis=500)  # fmt: skip
    JobRun.objects.create(job=job, number=1, started_at=end - timedelta(hours=3), ended_at=end,
                          gpus=2, user=ada, cpu_millis=500)  # fmt: skip
    Budget.objects.create(name="week", project=team_a, gpu_hours=Decimal(100),
                          window="rolling", rolling_days=7)  # fmt: skip
    Budget.objects.create(name="mine", project=team_a, user=ada, core_hours=Decimal(5),
                          window="rolling", rolling_days=7)  # fmt: skip
    samples = scrape()
    week = (("budget", "week"), ("scope", "project team-a"))
    mine = (("budget", "mine"), ("scope", "ada in project team-a"))
    assert samples[("allot_budget_gpu_seconds", week)] == 100 * 3600
    assert samples[("allot_budget_used_gpu_seconds", week)] == 2 * 3 * 3600  # 2 GPUs, 3 hours
    assert ("allot_budget_gpu_seconds", mine) not in samples  # a core-hour budget only
    assert samples[("allot_budget_core_seconds", mine)] == 5 * 3600
    assert samples[("allot_budget_used_core_seconds", mine)] == 0.5 * 3 * 3600
    # at the last day's rate (6 GPU-hours in 24 h) the 94 GPU-hours left last 376 hours more
    runs_out = samples[("allot_budget_runs_out_timestamp_seconds", week)]
    assert abs(runs_out - (timezone.now() + timedelta(hours=376)).timestamp()) < 120
