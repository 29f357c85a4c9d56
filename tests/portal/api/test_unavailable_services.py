"""A backing service that is away for a moment is a 503 with Retry-After, not a 500 (issue 40's
fault tier: during a Redis restart six submissions answered 500, the submit throttle's counter
being in Redis; during a PostgreSQL restart two deletions did)."""

from __future__ import annotations

import pytest
import redis
from django.db import OperationalError

from portal.api.throttling import SubmitThrottle
from portal.jobs.models import Job

pytestmark = pytest.mark.django_db


class _Away:
    """A cache whose server does not answer, as Django's RedisCache raises then."""

    def get(self, *args, **kwargs):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379.")

    set = get


def test_a_submission_while_redis_is_away_is_a_503_naming_it(api, member, nodes, settings,
                                                             monkeypatch):  # fmt: skip
    settings.ALLOT_SUBMIT_RATE = "100/min"
    monkeypatch.setattr(SubmitThrottle, "cache", _Away())
    answer = api(member).post("/api/v1/jobs/", {"project": "team-a", "name": "a", "gpus": 1},
                              format="json")  # fmt: skip
    assert answer.status_code == 503, answer.content
    assert int(answer["Retry-After"]) > 0
    assert "Redis" in answer.json()["detail"]
    assert not Job.objects.exists()


def test_a_request_while_the_database_is_away_is_a_503_naming_it(api, member, nodes,
                                                                 monkeypatch):  # fmt: skip
    from portal.jobs import services

    def away(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(services, "delete_job", away)
    client = api(member)
    assert client.post("/api/v1/jobs/", {"project": "team-a", "name": "a", "gpus": 1},
                       format="json").status_code == 201  # fmt: skip
    answer = client.delete("/api/v1/jobs/team-a/a/")
    assert answer.status_code == 503, answer.content
    assert int(answer["Retry-After"]) > 0
    assert "database" in answer.json()["detail"]
