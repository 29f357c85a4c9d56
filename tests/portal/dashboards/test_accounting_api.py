"""GPU-hour accounting over REST and CSV (issue 23): for a scripted week of runs, the per-project,
per-department and per-user GPU-hours equal the sum over the runs, exactly; runs crossing
midnight are split between the days; a team sees only its own; bad parameters are 400s naming
the field."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from django.utils.dateparse import parse_datetime

from portal.jobs.models import UsageRollup
from portal.tenancy.models import Project
from tests.portal.dashboards.accounting_week import (
    ALLOCATED,
    BY_DEPARTMENT,
    BY_USER,
    MONDAY,
    OVER_QUOTA,
    TEAM_A_DAYS,
    UNTIL,
    make_week,
    runs_sum,
)

pytestmark = pytest.mark.django_db
URL = "/api/v1/accounting/"
WEEK = {"since": "2026-11-16", "until": UNTIL}
SUNDAY_MIDNIGHT = datetime(2026, 11, 23, tzinfo=UTC)


@pytest.fixture
def week():
    return make_week()


def get(api, user, **params):
    response = api(user).get(URL, params)
    assert response.status_code == 200, response.content[:500]
    return response.json()


def csv_of(api, user, **params) -> list[dict]:
    response = api(user).get(URL, {**params, "format": "csv"})
    assert response.status_code == 200, response.content[:500]
    assert response.streaming and response["Content-Type"].startswith("text/csv")
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


def totals(body: dict, key: str, figure: str = "allocated_gpu_hours") -> dict:
    return {row[key]: row[figure] for row in body["totals"]}


def test_per_project_gpu_hours_equal_the_sum_over_the_runs_exactly(api, week):
    body = get(api, week["root"], **WEEK)
    assert totals(body, "project") == ALLOCATED
    for name, hours in ALLOCATED.items():
        assert hours == runs_sum(MONDAY, SUNDAY_MIDNIGHT, job__project__name=name)
    assert body["total"]["allocated_gpu_hours"] == sum(ALLOCATED.values())
    assert totals(body, "project", "runs") == {"team-a": 7, "team-b": 2, "team-c": 1}


def test_a_run_crossing_midnight_is_split_between_the_days_exactly(api, week):
    body = get(api, week["root"], **WEEK, project="team-a")
    days = {row["period"]: row["allocated_gpu_hours"] for row in body["rows"]}
    assert days == TEAM_A_DAYS
    assert [p["period"] for p in body["periods"]] == [f"2026-11-{d}" for d in range(16, 23)]
    team_c = get(api, week["root"], **WEEK, project="team-c")["rows"]
    assert [(row["period"], row["allocated_gpu_hours"]) for row in team_c] == [
        ("2026-11-20", 0.25), ("2026-11-21", 0.25)]  # fmt: skip


def test_per_user_and_per_department_gpu_hours_add_up(api, week):
    by_user = get(api, week["root"], **WEEK, group_by="user")
    assert totals(by_user, "user") == BY_USER
    for name, hours in BY_USER.items():
        assert hours == runs_sum(MONDAY, SUNDAY_MIDNIGHT, job__user__username=name)
    by_department = get(api, week["root"], **WEEK, group_by="department")
    assert totals(by_department, "department") == BY_DEPARTMENT


def test_over_quota_gpu_hours_are_the_newest_runs_above_the_quota(api, week):
    body = get(api, week["root"], **WEEK)
    assert totals(body, "project", "over_quota_gpu_hours") == OVER_QUOTA
    by_user = get(api, week["root"], **WEEK, group_by="user")
    # a-big (alice) started after b-overnight (bob): a-big is the borrowed part
    assert totals(by_user, "user", "over_quota_gpu_hours") == {
        "alice": 4.0, "bob": 0.0, "eve": 0.5, "dave": 0.0}  # fmt: skip
    days = {
        r["period"]: r["over_quota_gpu_hours"] for r in body["rows"] if r["project"] == "team-a"
    }
    assert (days["2026-11-16"], days["2026-11-17"], days["2026-11-18"]) == (2.0, 2.0, 0.0)


def test_a_running_run_counts_up_to_now_as_on_the_job_page(api, week):
    body = get(api, week["root"], since="2026-11-16")
    now = parse_datetime(body["now"])
    for name in ALLOCATED:
        expected = runs_sum(now, job__project__name=name)
        assert totals(body, "project")[name] == pytest.approx(expected, rel=1e-12, abs=0)
    assert totals(body, "project")["team-a"] > ALLOCATED["team-a"]  # b-running goes on


def test_the_csv_has_the_same_figures(api, week):
    rows = csv_of(api, week["root"], **WEEK, group_by="user")
    total = {row["user"]: float(row["allocated_gpu_hours"]) for row in rows
             if row["period"] == "total"}  # fmt: skip
    assert total == BY_USER
    daily: dict[str, float] = {}
    for row in rows:
        if row["period"] != "total":
            daily[row["user"]] = daily.get(row["user"], 0.0) + float(row["allocated_gpu_hours"])
    assert daily == BY_USER
    projects = csv_of(api, week["root"], **WEEK)
    assert {r["project"]: float(r["allocated_gpu_hours"]) for r in projects
            if r["period"] == "total"} == ALLOCATED  # fmt: skip
    assert {r["project"]: float(r["over_quota_gpu_hours"]) for r in projects
            if r["period"] == "total"} == OVER_QUOTA  # fmt: skip
    assert {r["used_basis"] for r in projects} == {"not measured"}
    assert {r["used_gpu_hours"] for r in projects} == {""}


def test_months_hold_the_whole_week(api, week):
    body = get(api, week["root"], **WEEK, period="month")
    assert [row["period"] for row in body["rows"]] == ["2026-11"] * 3
    assert {row["project"]: row["allocated_gpu_hours"] for row in body["rows"]} == ALLOCATED


def test_used_gpu_hours_weigh_by_the_measured_utilization_and_say_when_not_measured(api, week):
    team_b, team_c = Project.objects.get(name="team-b"), Project.objects.get(name="team-c")

    def hour(project, h, quota, utilization=None, simulated=False, day=3):
        UsageRollup.objects.create(
            resolution_s=3600, bucket=MONDAY.replace(day=16 + day, hour=h), project=project,
            samples=10, quota_sum=quota * 10, utilization_sum=(utilization or 0) * 10,
            utilization_samples=10 if utilization is not None else 0, simulated=simulated,
        )  # fmt: skip

    hour(team_b, 10, 2, 0.5)
    hour(team_b, 11, 2, 0.25)
    hour(team_b, 12, 3)  # quota raised to 3 for that hour, utilization not measured
    hour(team_c, 23, 1, 1.0, simulated=True, day=4)
    body = {r["project"]: r for r in get(api, week["root"], **WEEK)["totals"]}
    b = body["team-b"]
    assert b["used_gpu_hours"] == 1.5 * 0.5 + 1.5 * 0.25
    assert b["unmeasured_gpu_hours"] == 7.0 - 3.0
    assert b["utilization"] == 0.375 and b["used_basis"] == "partly measured"
    assert b["over_quota_gpu_hours"] == 0.0  # 2.5 GPUs on the recorded quota of 3
    c = body["team-c"]
    assert (c["used_gpu_hours"], c["used_basis"]) == (0.25, "simulated")
    a = body["team-a"]
    assert (a["used_gpu_hours"], a["utilization"], a["used_basis"]) == (None, None, "not measured")


@pytest.mark.parametrize("who", ["bob", "vera", "alice"])
def test_a_team_sees_only_its_own_projects(api, week, who):
    by_project = get(api, week[who], **WEEK)
    assert totals(by_project, "project") == {"team-a": ALLOCATED["team-a"]}
    by_user = get(api, week[who], **WEEK, group_by="user")
    assert set(totals(by_user, "user")) == {"alice", "bob"}
    by_department = get(api, week[who], **WEEK, group_by="department")
    assert totals(by_department, "department") == {"physics": ALLOCATED["team-a"]}
    rows = csv_of(api, week[who], **WEEK, group_by="user")
    assert {row["user"] for row in rows} == {"alice", "bob"}


def test_an_outsider_sees_nothing_of_other_teams(api, week):
    body = get(api, week["eve"], **WEEK, group_by="user")
    assert totals(body, "user") == {"eve": 7.0}
    response = api(week["eve"]).get(URL, {**WEEK, "project": "team-a"})
    assert response.status_code == 404  # as for a project there is not: nothing said of it
    missing = api(week["eve"]).get(URL, {**WEEK, "project": "no-such-team"})
    assert missing.status_code == 404
    assert response.json()["project"][0].replace("team-a", "X") == missing.json()["project"][
        0].replace("no-such-team", "X")  # fmt: skip
    assert b"alice" not in b"".join(csv_of_bytes(api, week["eve"]))
    assert api().get(URL).status_code == 401


def csv_of_bytes(api, user):
    response = api(user).get(URL, {**WEEK, "group_by": "user", "format": "csv"})
    return list(response.streaming_content)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"group_by": "team"}, "group_by"),
        ({"period": "week"}, "period"),
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"since": "2026-11-20", "until": "2026-11-19"}, "since"),
        ({"since": "2024-01-01", "until": "2026-01-01"}, "since"),
    ],
)
def test_bad_parameters_are_400_naming_the_field(api, week, params, field):
    response = api(week["root"]).get(URL, params)
    assert response.status_code == 400
    assert list(response.json()) == [field]
    as_csv = api(week["root"]).get(URL, {**params, "format": "csv"})
    assert as_csv.status_code == 400 and as_csv.content.decode().startswith(field + ",")
