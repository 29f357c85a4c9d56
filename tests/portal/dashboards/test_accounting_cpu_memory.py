"""Core-hours and memory GiB-hours beside GPU-hours (issue 26): the scripted week with CPU and
memory on one overnight gang and a CPU-only job; the API, the CSV and the per-day split add them
up from the runs, CPU-only runs included, and leave every GPU figure as it was."""

from __future__ import annotations

import csv
import io

import pytest

from portal.jobs.models import Job, JobRun, RunEnd, Status
from portal.tenancy.models import Project
from scheduler.quantity import GIB
from tests.portal.dashboards.accounting_week import ALLOCATED, UNTIL, at, make_week

pytestmark = pytest.mark.django_db
URL = "/api/v1/accounting/"
WEEK = {"since": "2026-11-16", "until": UNTIL}
CORE_HOURS = {"team-a": 8 * 5.5, "team-b": 0.0, "team-c": 2.5 * 2}
GIB_HOURS = {"team-a": 32 * 5.5, "team-b": 0.0, "team-c": 6 * 2}


def with_cpu_and_memory() -> dict:
    """b-overnight (2 pods, Monday 22:00 to Tuesday 03:30) asks 4 cores and 16 GiB a pod; dave
    runs a CPU-only job of 2.5 cores and 6 GiB on Thursday 10:00-12:00."""
    users = make_week()
    Job.objects.filter(name="b-overnight").update(cpu_millis=4000, memory_bytes=16 * GIB)
    JobRun.objects.filter(job_name="b-overnight").update(cpu_millis=8000, memory_bytes=32 * GIB)
    job = Job.objects.create(project=Project.objects.get(name="team-c"), name="d-prep",
                             user=users["dave"], gpus=0, cpu_millis=2500, memory_bytes=6 * GIB,
                             status=Status.SUCCEEDED)  # fmt: skip
    JobRun.objects.create(job=job, number=1, started_at=at(3, 10), ended_at=at(3, 12), gpus=0,
                          end=RunEnd.COMPLETED)  # fmt: skip
    return users


@pytest.fixture
def week():
    return with_cpu_and_memory()


def get(api, user, **params) -> dict:
    response = api(user).get(URL, params)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def by(body: dict, key: str, figure: str) -> dict:
    return {row[key]: row[figure] for row in body["totals"]}


def test_core_and_gib_hours_per_project_add_up_over_the_runs(api, week):
    body = get(api, week["root"], **WEEK)
    assert by(body, "project", "allocated_core_hours") == CORE_HOURS
    assert by(body, "project", "allocated_memory_gib_hours") == GIB_HOURS
    assert body["total"]["allocated_core_hours"] == sum(CORE_HOURS.values())
    assert body["total"]["allocated_memory_gib_hours"] == sum(GIB_HOURS.values())
    # the CPU-only run holds no GPU: GPU-hours and the runs that held GPUs are as before
    assert by(body, "project", "allocated_gpu_hours") == ALLOCATED
    assert by(body, "project", "runs") == {"team-a": 7, "team-b": 2, "team-c": 1}


def test_a_run_crossing_midnight_splits_its_core_hours_too(api, week):
    rows = get(api, week["root"], **WEEK, project="team-a")["rows"]
    cores = {row["period"]: row["allocated_core_hours"] for row in rows}
    memory = {row["period"]: row["allocated_memory_gib_hours"] for row in rows}
    assert cores["2026-11-16"] == 8 * 2 and cores["2026-11-17"] == 8 * 3.5
    assert memory["2026-11-16"] == 32 * 2 and memory["2026-11-17"] == 32 * 3.5
    assert cores["2026-11-18"] == 0  # a-evicted holds GPUs only


def test_per_user_and_a_cpu_only_users_row(api, week):
    body = get(api, week["root"], **WEEK, group_by="user")
    assert by(body, "user", "allocated_core_hours")["bob"] == 44
    assert by(body, "user", "allocated_core_hours")["dave"] == 5
    dave = get(api, week["dave"], **WEEK, project="team-c", period="day")["rows"]
    thursday = next(row for row in dave if row["period"] == "2026-11-19")
    assert (thursday["allocated_gpu_hours"], thursday["allocated_core_hours"],
            thursday["allocated_memory_gib_hours"], thursday["runs"]) == (0, 5, 12, 0)  # fmt: skip


def test_the_csv_has_the_two_columns(api, week):
    response = api(week["root"]).get(URL, {**WEEK, "format": "csv"})
    text = b"".join(response.streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    totals = {row["project"]: row for row in rows if row["period"] == "total"}
    assert {name: float(row["allocated_core_hours"]) for name, row in totals.items()} == CORE_HOURS
    assert {name: float(row["allocated_memory_gib_hours"]) for name, row in totals.items()} == (
        GIB_HOURS
    )
