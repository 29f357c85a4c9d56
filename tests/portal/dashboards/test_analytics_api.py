"""GET /api/v1/analytics/allocation/: per-project GPUs, CPU and memory over time from samples
and rollups."""

import csv
import io
from datetime import UTC, datetime, timedelta

import pytest

from portal.dashboards.analytics import (
    CSV_COLUMNS,
    _rows,
    _rows_portable,
    auto_step,
    roll_up,
    source_for,
)
from portal.jobs.models import UsageRollup, UsageSample
from scheduler.quantity import GIB, MIB

pytestmark = pytest.mark.django_db
T0 = datetime(2026, 11, 1, tzinfo=UTC)  # on an hour boundary


def record(project, seconds, allocated, quota=4.0, pending=0, utilization=0.5, idle=0.0,
           cpu_millis=0, memory_bytes=0):  # fmt: skip
    """One sample, rolled up like the cycle does."""
    sample = UsageSample.objects.create(
        time=T0 + timedelta(seconds=seconds), project=project, quota=quota, fair_share=quota,
        allocated_gpus=allocated, running_jobs=int(allocated), pending_jobs=pending,
        utilization=utilization, idle_gpus=idle, allocated_cpu_millis=cpu_millis,
        allocated_memory_bytes=memory_bytes, simulated=True,
    )  # fmt: skip
    roll_up([sample])


@pytest.fixture
def two_hours(team_a, team_b):
    """team-a holds 4 GPUs, 16 cores and 64 GiB in the first hour and 8 GPUs, 32 cores and
    128 GiB in the second; team-b 2 GPUs, 1.5 cores and 1.5 GiB, then a CPU-only job of 6 cores
    and 12 GiB (no GPU) for the first half of the second hour."""
    for second in range(0, 7200, 10):
        first_hour = second < 3600
        record(team_a, second, 4.0 if first_hour else 8.0, pending=0 if first_hour else 2,
               cpu_millis=16000 if first_hour else 32000,
               memory_bytes=64 * GIB if first_hour else 128 * GIB)  # fmt: skip
        cpu_only = 3600 <= second < 5400
        record(team_b, second, 2.0 if first_hour else 0.0, quota=2.0,
               idle=2.0 if first_hour else 0.0,
               cpu_millis=1500 if first_hour else 6000 if cpu_only else 0,
               memory_bytes=1536 * MIB if first_hour else 12 * GIB if cpu_only else 0)  # fmt: skip


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
    assert rows[0][-3:] == ["idle_gpus", "allocated_cpu_cores", "allocated_memory_gib"]
    team_a = [row for row in rows[1:] if row[1] == "team-a"]
    assert [float(row[2]) for row in team_a] == [4.0, 8.0]
    assert [(float(row[-2]), float(row[-1])) for row in team_a] == [(16.0, 64.0), (32.0, 128.0)]
    team_b = [row for row in rows[1:] if row[1] == "team-b"]
    assert [(float(row[-2]), float(row[-1])) for row in team_b] == [(1.5, 1.5), (3.0, 6.0)]


def test_cpu_and_memory_are_the_means_of_each_step_in_cores_and_gib(api, cluster_admin, two_hours):
    body = get(api(cluster_admin), **{"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T02:00:00Z",
               "step": 3600}).json()  # fmt: skip
    assert series(body, "team-a")["cpu"] == [16.0, 32.0]
    assert series(body, "team-a")["memory"] == [64.0, 128.0]
    # the CPU-only job ran half of the second hour: 6 cores and 12 GiB for 30 minutes
    assert series(body, "team-b")["cpu"] == [1.5, 3.0]
    assert series(body, "team-b")["memory"] == [1.5, 6.0]
    assert series(body, "team-b")["allocated"] == [2.0, 0.0]  # it held no GPU
    assert body["cluster"]["cpu"] == [17.5, 35.0]
    assert body["cluster"]["memory"] == [65.5, 134.0]


@pytest.mark.parametrize(
    ("step", "source"),
    [(60, "samples"), (300, "rollup-300s"), (900, "rollup-300s"), (3600, "rollup-3600s"),
     (7200, "rollup-3600s")],
)  # fmt: skip
def test_every_source_gives_the_same_cpu_and_memory(api, cluster_admin, two_hours, step, source):
    """Raw samples (_RAW), rollups read as they are (_ROLLUP_AS_IS) and rollups grouped into
    longer steps (_ROLLUP) agree: the mean of team-b's CPU over the two hours is the same."""
    body = get(api(cluster_admin), **{"from": "2026-11-01T00:00:00Z", "to": "2026-11-01T02:00:00Z",
               "step": step}).json()  # fmt: skip
    assert body["source"] == source
    cpu, memory = series(body, "team-b")["cpu"], series(body, "team-b")["memory"]
    assert len(cpu) == 7200 // step
    assert sum(cpu) / len(cpu) == pytest.approx((1.5 + 3.0) / 2)
    assert sum(memory) / len(memory) == pytest.approx((1.5 + 6.0) / 2)
    cluster = body["cluster"]["cpu"]
    assert sum(cluster) / len(cluster) == pytest.approx((17.5 + 35.0) / 2)


@pytest.mark.parametrize(("resolution", "step"), [(0, 60), (300, 300), (300, 900), (3600, 3600),
                                                  (3600, 7200)])  # fmt: skip
def test_the_portable_query_gives_the_rows_postgresql_gives(two_hours, resolution, step):
    """SQLite's path (_rows_portable, run here on PostgreSQL through the ORM) and PostgreSQL's
    SQL return the same rows, CPU cores and memory GiB included."""
    start, end = T0, T0 + timedelta(hours=2)
    first = int(start.timestamp())
    portable = sorted(_rows_portable(resolution, start, end, step, first))
    native = sorted(_rows(resolution, start, end, step, first))
    assert portable == native
    team_a_first_cpu = 24.0 if step == 7200 else 16.0  # two hours' mean, or the first hour's
    assert team_a_first_cpu in {row[-3] for row in native}


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
    client = api(cluster_admin)
    for body in (
        {"project": "team-a", "name": "j", "gpus": 2, "pods": 2, "cpu": "1500m", "memory": "3Gi"},
        {"project": "team-a", "name": "cpu-only", "gpus": 0, "cpu": "4", "memory": "512Mi"},
        {"project": "team-a", "name": "waits", "gpus": 16, "cpu": "8", "memory": "64Gi"},
    ):
        assert client.post("/api/v1/jobs/", body, format="json").status_code == 201, body
    settle()
    newest = UsageSample.objects.filter(project=team_a).latest("time")
    assert newest.allocated_gpus == 4.0
    assert newest.running_jobs == 2 and newest.pending_jobs == 1
    # per pod, times the pods, of the running jobs only (the pending one holds nothing)
    assert newest.allocated_cpu_millis == 2 * 1500 + 4000
    assert newest.allocated_memory_bytes == (2 * 3072 + 512) * MIB
    hour = newest.time.replace(minute=0, second=0, microsecond=0)
    hourly = UsageRollup.objects.get(resolution_s=3600, project=team_a, bucket=hour)
    samples = UsageSample.objects.filter(project=team_a, time__gte=hourly.bucket)
    assert hourly.samples == samples.count()
    assert hourly.cpu_millis_sum == sum(s.allocated_cpu_millis for s in samples)
    assert hourly.memory_bytes_sum == sum(s.allocated_memory_bytes for s in samples)


def _openapi_to_json_schema(node, components):
    """The OpenAPI 3.0 schema as JSON Schema: $refs resolved, `nullable` as a null type."""
    if isinstance(node, list):
        return [_openapi_to_json_schema(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _openapi_to_json_schema(components[node["$ref"].rsplit("/", 1)[-1]], components)
    schema = {key: _openapi_to_json_schema(value, components) for key, value in node.items()
              if key != "nullable"}  # fmt: skip
    if node.get("nullable"):
        schema = {"anyOf": [schema, {"type": "null"}]}
    return schema


def test_the_answer_is_the_one_the_schema_documents(api, cluster_admin, two_hours):
    import jsonschema
    from drf_spectacular.generators import SchemaGenerator

    document = SchemaGenerator().get_schema(public=True)
    operation = document["paths"]["/api/v1/analytics/allocation/"]["get"]
    documented = operation["responses"]["200"]["content"]["application/json"]["schema"]
    schema = _openapi_to_json_schema(documented, document["components"]["schemas"])
    body = get(api(cluster_admin), **{"from": "2026-11-01T00:00:00Z",
               "to": "2026-11-01T03:00:00Z", "step": 3600}).json()  # fmt: skip
    jsonschema.validate(body, schema)  # a gap (None) included: the third hour has no sample
    assert set(body) == set(schema["properties"])
    project = schema["properties"]["projects"]["items"]["properties"]
    assert set(body["projects"][0]) == set(project) and {"cpu", "memory"} <= set(project)
    cluster = schema["properties"]["cluster"]["properties"]
    assert set(body["cluster"]) == set(cluster) and {"cpu", "memory"} <= set(cluster)
    # the CSV's columns are documented in the operation's description
    assert ", ".join(CSV_COLUMNS) in " ".join(operation["description"].split())
