"""One researcher cannot crowd out everyone (issue 32 item 8): two bulk requests queued 2,000
pending jobs in 2.3 s, ten jobs of 2.4 MB environments made one job list answer 24 MB, and
viewers read every environment value, secrets included."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from portal.api.throttling import SubmitThrottle
from portal.jobs.models import Job

pytestmark = pytest.mark.django_db


def _sweep(prefix: str, count: int, project: str = "team-a") -> dict:
    return {"jobs": [{"project": project, "name": f"{prefix}-{i}", "gpus": 1}
                     for i in range(count)]}  # fmt: skip


def test_submissions_past_the_rate_are_a_429_naming_it_with_retry_after(
    api, member, nodes, settings
):
    settings.ALLOT_SUBMIT_RATE = "5/min"
    client = api(member)
    assert client.post("/api/v1/jobs/bulk/", _sweep("a", 4), format="json").status_code == 201
    refused = client.post("/api/v1/jobs/bulk/", _sweep("b", 2), format="json")  # 6 > 5
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "ALLOT_SUBMIT_RATE" in refused.json()["detail"]
    one = {"project": "team-a", "name": "c", "gpus": 1}
    assert client.post("/api/v1/jobs/", one, format="json").status_code == 201  # the 5th
    assert client.post("/api/v1/jobs/", {**one, "name": "d"}, format="json").status_code == 429
    assert client.get("/api/v1/jobs/").status_code == 200  # reading is not throttled
    assert Job.objects.count() == 5


def test_pending_jobs_past_the_users_cap_are_refused_naming_it_all_or_nothing(
    api, member, nodes, settings
):
    settings.ALLOT_MAX_PENDING_PER_USER = 3
    client = api(member)
    assert client.post("/api/v1/jobs/bulk/", _sweep("a", 2), format="json").status_code == 201
    refused = client.post("/api/v1/jobs/bulk/", _sweep("b", 2), format="json")
    assert (
        refused.status_code == 409 and "ALLOT_MAX_PENDING_PER_USER" in refused.json()["pending"][0]
    )
    assert Job.objects.count() == 2  # nothing of the refused sweep
    one = {"project": "team-a", "name": "c", "gpus": 1}
    assert client.post("/api/v1/jobs/", one, format="json").status_code == 201
    assert client.post("/api/v1/jobs/", {**one, "name": "d"}, format="json").status_code == 409


def test_a_projects_cap_counts_everyone_in_it(api, member, owner, nodes, settings):
    settings.ALLOT_MAX_PENDING_PER_PROJECT = 2
    assert api(member).post("/api/v1/jobs/bulk/", _sweep("a", 2), format="json").status_code == 201
    refused = api(owner).post("/api/v1/jobs/", {"project": "team-a", "name": "x", "gpus": 1},
                              format="json")  # fmt: skip
    assert refused.status_code == 409
    assert "ALLOT_MAX_PENDING_PER_PROJECT" in refused.json()["pending"][0]


@pytest.mark.django_db(transaction=True)
def test_two_submissions_at_once_do_not_both_pass_the_cap(api, member, nodes, settings):
    from django.db import connection

    settings.ALLOT_MAX_PENDING_PER_USER = 5
    answers = []

    def submit(prefix):
        try:
            answers.append(api(member).post("/api/v1/jobs/bulk/", _sweep(prefix, 3),
                                            format="json").status_code)  # fmt: skip
        finally:
            connection.close()

    threads = [threading.Thread(target=submit, args=(p,)) for p in ("a", "b")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(answers) == [201, 409] and Job.objects.count() == 3


def test_an_environment_larger_than_the_cap_is_a_400_naming_it(api, member, nodes, settings):
    settings.ALLOT_MAX_ENVIRONMENT_BYTES = 1024
    body = {"project": "team-a", "name": "big", "gpus": 1, "environment": {"DATA": "x" * 2000}}
    answer = api(member).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 400 and "ALLOT_MAX_ENVIRONMENT_BYTES" in answer.json()[
        "environment"][0]  # fmt: skip


def test_viewers_read_no_value_and_secrets_are_the_owners(api, member, owner, viewer, nodes):
    body = {"project": "team-a", "name": "t", "gpus": 1,
            "environment": {"SEED": "42", "WANDB_API_KEY": "s3cr3t"},
            "secret_environment": ["WANDB_API_KEY"]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    seen = {user.username: api(user).get("/api/v1/jobs/team-a/t/").json()["environment"]
            for user in (member, owner, viewer)}  # fmt: skip
    assert seen["bob"] == {"SEED": "42", "WANDB_API_KEY": "s3cr3t"}  # the owner
    assert seen["alice"] == {"SEED": "42", "WANDB_API_KEY": "(hidden)"}  # the project's admin
    assert seen["vera"] == {"SEED": "(hidden)", "WANDB_API_KEY": "(hidden)"}  # a viewer
    listed = api(viewer).get("/api/v1/jobs/", {"project": "team-a"}).json()["results"]
    assert "s3cr3t" not in str(listed) and "42" not in str(listed[0]["environment"])
    bad = api(member).post("/api/v1/jobs/", {**body, "name": "u", "secret_environment": ["NOPE"]},
                           format="json")  # fmt: skip
    assert bad.status_code == 400 and "secret_environment" in bad.json()


def test_the_rates_history_stays_short_and_never_looser(settings):
    """Issue 39: the throttle kept one entry per submission (4,000 read and written back at
    each of bench-k8s's POSTs); now one sum per 120th of the period, stamped with its latest
    submission, so a sum leaves the window only when all it counts has."""
    settings.ALLOT_SUBMIT_RATE = "1000/min"
    now = [5000.0]
    user = SimpleNamespace(is_authenticated=True, pk=987654)

    def submit(jobs: int = 1) -> tuple[bool, SubmitThrottle]:
        throttle = SubmitThrottle()
        throttle.timer = lambda: now[0]
        data = {"jobs": [{}] * jobs} if jobs > 1 else {}
        return throttle.allow_request(
            SimpleNamespace(method="POST", user=user, data=data), None
        ), throttle

    first = now[0]
    for _ in range(990):
        now[0] += 0.05  # 990 submissions in 49.5 s
        assert submit()[0]
    allowed, throttle = submit(10)  # the 1,000th job
    assert allowed and len(throttle.history) <= SubmitThrottle.BUCKETS + 1
    assert sum(n for _, n in throttle.history) == 1000
    refused, throttle = submit()
    assert not refused and 0 < throttle.wait() <= 60
    now[0] = first + 60.1  # the first submission has left the window; its bucket's last not
    assert not submit()[0]
    now[0] = first + 60.0 + 60 / SubmitThrottle.BUCKETS + 0.05  # its whole bucket has left
    assert submit()[0]
