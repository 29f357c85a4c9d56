"""GET /api/v1/analytics/allocation/: per-project GPUs over time from samples and rollups."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from portal.dashboards.analytics import auto_step, roll_up, source_for
from portal.jobs.models import UsageRollup, UsageSample

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 1, tzinfo=UTC)  # on an hour boundary


def record(project, seconds, allocated, quota=4.0, pending=0, utilization=0.5, idle=0.0):
    """One sample, rolled up like the cycle does."""
    sample = UsageSample.objects.create(
        time=T0 + timedelta(seconds=seconds), project=project, quota=quota, fair_share=quota,
        allocated_gpus=allocated, running_jobs=int(allocated), pending_jobs=pending,
        utilization=utilization, idle_gpus=idle, simulated=True,
    )  # fmt: skip
    roll_up([sample])


@pytest.fixture
def two_hours(team_a, team_b):
    """team-a holds 4 GPUs in the first hour and 8 in the second; team-b 2 then 0."""
    for second in range(0, 7200, 10):
        first_hour = second < 3600
        record(team_a, second, 4.0 if first_hour else 8.0, pending=0 if first_hour else 2)
        record(team_b, second, 2.0 if first_hour else 0.0, quota=2.0,
               idle=2.0 if first_hour else 0.0)  # fmt: skip


def get(client, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.get(f"/api/v1/analytics/allocation/?{query}")


def series(body, name):
    return next(p for p in body["projects"] if p["name"] == name)


def test_hourly_steps_give_the_mean_of_each_hour(api, cluster_admin, two_hours):
    body = get(api(cluster_admin), **{"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T02:00:00Z",
               "step": 3600}).json()  # fmt: skip
    assert body["source"] == "rollup-3600s" and body["step_s"] == 3600
    assert series(body, "team-a")["allocated"] == [4.0, 8.0]
    assert series(body, "team-a")["quota"] == [4.0, 4.0]
    assert series(body, "team-b")["allocated"] == [2.0, 0.0]
    assert body["cluster"]["allocated"] == [6.0, 8.0]
    assert body["cluster"]["pending"] == [0.0, 2.0]
    assert body["simulated"] is True


def test_idle_gpu_hours_add_up_over_the_range(api, cluster_admin, two_hours):
    client = api(cluster_admin)
    window = {"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T02:00:00Z"}
    for step in (60, 300, 3600):  # samples, 5-minute and hourly rollups
        body = get(client, **window, step=step).json()
        assert series(body, "team-b")["idle_gpu_hours"] == 2.0  # 2 GPUs idle for an hour
        assert series(body, "team-a")["idle_gpu_hours"] == 0.0


def test_raw_samples_and_rollups_agree(api, cluster_admin, two_hours):
    client = api(cluster_admin)
    window = {"from": "2026-11-01T00:30:00Z", "to": "2026-11-01T01:30:00Z"}
    rolled = get(client, **window, step=300).json()
    raw = get(client, **window, step=60).json()
    assert rolled["source"] == "rollup-300s" and raw["source"] == "samples"
    per_minute = series(raw, "team-a")["allocated"]
    five = [sum(per_minute[i : i + 5]) / 5 for i in range(0, 60, 5)]
    assert series(rolled, "team-a")["allocated"] == five


def test_steps_without_samples_are_gaps_not_zeros(api, cluster_admin, two_hours):
    body = get(api(cluster_admin), **{"from": "2026-11-01T01:00:00Z",
               "to": "2026-11-01T04:00:00Z", "step": 3600}).json()  # fmt: skip
    assert series(body, "team-a")["allocated"] == [8.0, None, None]
    assert body["cluster"]["allocated"] == [8.0, None, None]


def test_a_viewer_gets_their_projects_and_the_cluster_totals(api, viewer, two_hours):
    body = get(api(viewer), **{"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T02:00:00Z",
               "step": 3600}).json()  # fmt: skip
    assert [p["name"] for p in body["projects"]] == ["team-a"]
    assert body["cluster"]["allocated"] == [6.0, 8.0]


def test_the_csv_holds_the_same_series(api, cluster_admin, two_hours):
    response = get(api(cluster_admin), **{"from": "2026-11-01T00:00:00Z",
                   "to": "2026-11-01T02:00:00Z", "step": 3600, "format": "csv"})  # fmt: skip
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    assert "attachment" in response["Content-Disposition"]
    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[0][:4] == ["time", "project", "allocated_gpus", "quota"]
    assert rows[0][-1] == "idle_gpus"
    team_a = [row for row in rows[1:] if row[1] == "team-a"]
    assert [float(row[2]) for row in team_a] == [4.0, 8.0]


@pytest.mark.parametrize(
    ("params", "field", "words"),
    [
        ({"from": "yesterday"}, "from", "ISO 8601"),
        ({"to": "2026-13-01T00:00:00Z"}, "to", "ISO 8601"),
        ({"from": "2026-11-02T00:00:00Z", "to": "2026-11-01T00:00:00Z"}, "from", "before"),
        ({"step": "0"}, "step", "between"),
        ({"step": "ten"}, "step", "whole number"),
        (
            {"from": "2026-01-01T00:00:00Z", "to": "2026-11-01T00:00:00Z", "step": "60"},
            "step",
            "at most",
        ),
        ({"from": "2020-01-01T00:00:00Z", "to": "2026-01-01T00:00:00Z"}, "from", "400 days"),
    ],
)
def test_bad_parameters_are_a_400_naming_the_field(api, member, params, field, words):
    response = get(api(member), **params)
    assert response.status_code == 400
    assert words in " ".join(response.json()[field])


def test_anonymous_users_are_refused(api):
    assert api().get("/api/v1/analytics/allocation/").status_code in (401, 403)


def test_steps_choose_the_coarsest_source_that_divides_them():
    assert [source_for(step) for step in (10, 60, 300, 900, 3600, 86400)] == [
        0, 0, 300, 300, 3600, 3600]  # fmt: skip
    day = (T0, T0 + timedelta(days=1))
    assert auto_step(*day, 10) == 300
    assert auto_step(T0, T0 + timedelta(days=30), 10) == 3600
    assert auto_step(T0, T0 + timedelta(hours=1), 10) == 10


def test_the_cycle_writes_samples_and_rollups(settings, api, cluster_admin, nodes, team_a):
    from portal.scheduling.settle import settle

    settings.ALLOT_USAGE_SAMPLE_INTERVAL_S = 0
    api(cluster_admin).post("/api/v1/jobs/", {"project": "team-a", "name": "j", "gpus": 2},
                            format="json")  # fmt: skip
    settle()
    newest = UsageSample.objects.filter(project=team_a).latest("time")
    assert newest.allocated_gpus == 2.0
    hour = newest.time.replace(minute=0, second=0, microsecond=0)
    hourly = UsageRollup.objects.get(resolution_s=3600, project=team_a, bucket=hour)
    samples = UsageSample.objects.filter(project=team_a, time__gte=hourly.bucket).count()
    assert hourly.samples == samples
