"""A page of a list and the count of all come from one query (issue 39), and every answer is
the one Django's own paginator gives: each page, the last, one past it, an empty list."""

from __future__ import annotations

import pytest
from django.core.paginator import Paginator
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.api import pagination
from portal.jobs.models import Job, JobEvent
from portal.tenancy import token_cache

pytestmark = pytest.mark.django_db


def answers(client, paths: list[str]) -> list[tuple[int, dict]]:
    """Each answer's status and body, less how long each job has waited (it moves)."""
    found = []
    for answer in map(client.get, paths):
        body = answer.json()
        for row in body.get("results", []):
            row.pop("wait_s", None)
        found.append((answer.status_code, body))
    return found


def test_every_page_answers_as_djangos_paginator_answers(api, member, team_a, monkeypatch):
    for i in range(7):
        Job.objects.create(project=team_a, name=f"job-{i}", gpus=1, user=member)
    client = api(member)
    paths = [f"/api/v1/jobs/?project=team-a&page_size=3&page={page}" for page in (1, 2, 3, 4)]
    paths += [
        "/api/v1/jobs/?project=team-b",
        "/api/v1/jobs/?project=team-a&ordering=-id",
        "/api/v1/jobs/?project=team-a&status=Running",
        "/api/v1/jobs/team-a/job-1/events/",
    ]
    ours = answers(client, paths)
    monkeypatch.setattr(pagination.Pagination, "django_paginator_class", Paginator)
    assert ours == answers(client, paths)
    assert [status for status, _ in ours] == [200, 200, 200, 404, 200, 200, 200, 200]


def test_a_page_and_its_count_are_one_query(api, member, team_a, monkeypatch):
    monkeypatch.setattr(token_cache, "SHARED", True)  # the token is kept, as with Redis
    for i in range(5):
        Job.objects.create(project=team_a, name=f"job-{i}", gpus=1, user=member)
    client = api(member)
    client.get("/api/v1/jobs/?project=team-a")  # the token read and kept
    with CaptureQueriesContext(connection) as queries:
        answer = client.get("/api/v1/jobs/?project=team-a&page_size=2&page=2")
    assert answer.json()["count"] == 5 and len(answer.json()["results"]) == 2
    sql = [query["sql"] for query in queries.captured_queries]
    assert len(sql) == 1 and "COUNT(*) OVER ()" in sql[0], sql


def test_a_page_past_the_last_is_counted_apart_and_is_a_404(api, member, team_a):
    Job.objects.create(project=team_a, name="only", gpus=1, user=member)
    answer = api(member).get("/api/v1/jobs/?project=team-a&page=2")
    assert answer.status_code == 404
    assert answer.json() == {"detail": "Invalid page."}


def test_querysets_a_window_would_count_otherwise_are_paginated_as_django_does(team_a, member):
    job = Job.objects.create(project=team_a, name="one", gpus=1, user=member)
    for kind in ("submitted", "scheduled", "submitted"):
        JobEvent.objects.create(job=job, project=team_a, job_name="one", kind=kind,
                                time=timezone.now())  # fmt: skip
    kinds = JobEvent.objects.order_by("kind").values_list("kind", flat=True).distinct()
    page = pagination.CountingPaginator(kinds, 10).page(1)
    assert (page.paginator.count, list(page)) == (2, ["scheduled", "submitted"])
    events = JobEvent.objects.order_by("id").distinct()
    assert pagination.CountingPaginator(events, 2).page(2).paginator.count == 3
