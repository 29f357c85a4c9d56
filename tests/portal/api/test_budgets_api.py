"""Budgets over REST (issue 36): cluster admins create, change and delete them; members read
their projects' budgets with what each used (counted from the runs, R20.1) and its forecast
(R20.6); a bad value is a 400 naming the field; the schema documents the endpoints."""

from datetime import datetime, timedelta

import pytest
from django.utils import timezone

from portal.audit.models import AuditEntry
from portal.budgets.models import Budget
from portal.jobs.models import Job, JobRun, Status

pytestmark = pytest.mark.django_db
URL = "/api/v1/budgets/"


@pytest.fixture
def admin_api(api, cluster_admin):
    return api(cluster_admin)


def test_an_admin_creates_a_hard_term_budget_and_a_member_reads_its_use(
    admin_api, api, member, owner, outsider, team_a
):
    body = {"name": "autumn", "project": "team-a", "gpu_hours": 10, "window": "term",
            "term_start": "2026-09-01", "term_end": "2099-12-20", "kind": "hard",
            "over": "preemptible"}  # fmt: skip
    response = admin_api.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    assert response.json()["thresholds"] == [80, 100]
    assert AuditEntry.objects.filter(action="budget.created").exists()
    now = timezone.now()
    job = Job.objects.create(project=team_a, name="j", gpus=2, status=Status.SUCCEEDED)
    JobRun.objects.create(job=job, number=1, gpus=2, started_at=now - timedelta(hours=2),
                          ended_at=now - timedelta(hours=1))  # fmt: skip
    (got,) = api(member).get(URL).json()["results"]
    assert got["usage"]["used_gpu_hours"] == pytest.approx(2.0)
    assert got["usage"]["gpu_hours_left"] == pytest.approx(8.0)
    assert got["usage"]["percent"] == pytest.approx(20.0)
    assert got["usage"]["thresholds_reached"] == [] and got["usage"]["spent"] is False
    assert got["usage"]["burn_rate_gpu_hours_per_hour"] == pytest.approx(2 / 24)
    runs_out = datetime.fromisoformat(got["usage"]["runs_out_at"])
    assert runs_out - now == pytest.approx(timedelta(hours=8 * 12), abs=timedelta(minutes=1))
    assert api(outsider).get(URL).json()["results"] == []
    assert api(outsider).get(f"{URL}{got['id']}/").status_code == 404
    assert api(owner).patch(f"{URL}{got['id']}/", {"gpu_hours": 1}, format="json").status_code \
        == 403  # fmt: skip


def test_a_user_budget_is_seen_by_its_user_and_the_project_admins_only(
    admin_api, api, member, owner, viewer, team_a
):
    body = {"name": "bob", "project": "team-a", "user": "bob", "gpu_hours": 5}
    assert admin_api.post(URL, body, format="json").status_code == 201
    assert len(api(member).get(URL).json()["results"]) == 1
    assert len(api(owner).get(URL).json()["results"]) == 1
    assert api(viewer).get(URL).json()["results"] == []


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"name": "x", "gpu_hours": 1}, "project", "exactly one of project or department"),
        ({"name": "x", "project": "team-a"}, "gpu_hours", "GPU-hours, core-hours or both"),
        (
            {
                "name": "x",
                "project": "team-a",
                "gpu_hours": 1,
                "window": "term",
                "term_start": "2026-09-01",
            },
            "term_end",
            "a term needs both dates",
        ),
        (
            {
                "name": "x",
                "project": "team-a",
                "gpu_hours": 1,
                "window": "term",
                "term_start": "2026-09-01",
                "term_end": "2026-08-01",
            },
            "term_end",
            "before",
        ),
        (
            {"name": "x", "project": "team-a", "gpu_hours": 1, "window": "rolling"},
            "rolling_days",
            "number of days",
        ),
        (
            {"name": "x", "project": "team-a", "gpu_hours": 1, "user": "eve"},
            "user",
            "eve is not a member of team-a",
        ),
        ({"name": "x", "project": "team-a", "gpu_hours": -1}, "gpu_hours", "greater than"),
        (
            {"name": "x", "project": "team-a", "gpu_hours": 1, "thresholds": [80, 80]},
            "thresholds",
            "once",
        ),
        ({"name": "x", "project": "team-a", "gpu_hours": 1, "kind": "firm"}, "kind", "valid"),
        ({"name": "x", "project": "nope", "gpu_hours": 1}, "project", "does not exist"),
    ],
)
def test_a_bad_budget_is_a_4xx_naming_the_field(admin_api, outsider, team_a, body, field, text):
    response = admin_api.post(URL, body, format="json")
    assert response.status_code == (404 if text == "does not exist" else 400), response.content
    assert text in str(response.json()[field]), response.json()
    assert not Budget.objects.exists()


def test_a_patch_is_checked_with_the_stored_fields(admin_api, team_a):
    budget = Budget.objects.create(name="m", project=team_a, gpu_hours=4)
    response = admin_api.patch(f"{URL}{budget.id}/", {"window": "term"}, format="json")
    assert response.status_code == 400 and "term_start" in response.json()
    response = admin_api.patch(f"{URL}{budget.id}/", {"gpu_hours": None}, format="json")
    assert response.status_code == 400 and "gpu_hours" in response.json()
    ok = admin_api.patch(f"{URL}{budget.id}/", {"core_hours": 100, "gpu_hours": None},
                         format="json")  # fmt: skip
    assert ok.status_code == 200, ok.content
    assert admin_api.delete(f"{URL}{budget.id}/").status_code == 204


def test_the_schema_documents_the_budget_endpoints(api, member):
    schema = api(member).get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert {"/api/v1/budgets/", "/api/v1/budgets/{id}/"} <= set(paths)
    usage = schema.json()["components"]["schemas"]["BudgetUsage"]["properties"]
    assert {"used_gpu_hours", "runs_out_at", "thresholds_reached"} <= set(usage)
