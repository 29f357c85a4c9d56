"""The job history's listing: the first page of 10,000 ended jobs (`make bench-history`).

Issue 23: "the listing API of 10,000 finished jobs answers the first page in < 200 ms". This
creates a fresh PostgreSQL database `allot_bench_history` (DATABASE_HOST/PORT/USER as
`DATABASE_URL` would name them: 127.0.0.1:5432, postgres), migrates it, stores 10,000 ended jobs
(Succeeded, Failed, TimedOut, Stopped; one run each) of 100 projects and 100 users, then times
`GET /api/v1/jobs/` in this process (DEBUG off), as a cluster admin and as a researcher of one
project, for the plain first page and for the history filters the web UI and `allot list --all`
send. It prints one line per request shape (median, p95, max in ms over `--repeat` requests)
and, last, one JSON object. Not a test: a figure to watch.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATABASE = "allot_bench_history"
SHAPES = {
    "first page": {},
    "history, newest first": {"status": "Succeeded,Failed,TimedOut,Stopped", "ordering": "-id"},
    "failed this month, one user": {"status": "Failed", "user": "user-5", "since": "MONTH"},
}


def fresh_database(url: str) -> None:
    import psycopg

    with psycopg.connect(url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {DATABASE}")


def setup(server: str) -> None:
    url = f"{server}/{DATABASE}"
    fresh_database(url)
    os.environ.update(DATABASE_URL=url, DEBUG="0", SECRET_KEY="history-bench-" + "x" * 40,
                      ALLOWED_HOSTS="testserver", SECURE_SSL_REDIRECT="0",
                      DJANGO_SETTINGS_MODULE="portal.settings")  # fmt: skip
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(jobs: int) -> tuple:
    """`jobs` ended jobs over 100 projects and 100 users; (admin, a researcher of project-0)."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from portal.jobs.models import Job, JobRun, RunEnd, Status
    from portal.tenancy.models import Membership, Project, Role

    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"user-{i}") for i in range(100)
    )
    admin = get_user_model().objects.create(username="bench-admin", is_staff=True)
    projects = Project.objects.bulk_create(
        Project(name=f"project-{i}", quota=8) for i in range(100)
    )
    Membership.objects.create(user=users[0], project=projects[0], role=Role.RESEARCHER)
    now, ended = timezone.now(), [Status.SUCCEEDED, Status.FAILED, Status.TIMED_OUT, Status.STOPPED]
    ends = {Status.SUCCEEDED: RunEnd.COMPLETED, Status.FAILED: RunEnd.FAILED,
            Status.TIMED_OUT: RunEnd.TIMED_OUT, Status.STOPPED: RunEnd.STOPPED}  # fmt: skip
    rows = Job.objects.bulk_create(
        (Job(project=projects[i % 100], user=users[i % 100], name=f"job-{i}", gpus=1,
             status=ended[i % 4], image="python:3.11", command=["python", "train.py"],
             started_at=now - timedelta(minutes=i + 30), finished_at=now - timedelta(minutes=i))
         for i in range(jobs)),
        batch_size=2000,
    )  # fmt: skip
    JobRun.objects.bulk_create(
        (JobRun(job=job, project_id=job.project_id, job_name=job.name, user_id=job.user_id,
                job_type=job.type, number=1, started_at=job.started_at, ended_at=job.finished_at,
                gpus=1, placement=[{"node": "dgx-1", "devices": [0], "share": 1.0}],
                end=ends[job.status], logs="epoch 1\n" * 200)
         for job in rows),
        batch_size=2000,
    )  # fmt: skip
    return admin, users[0]


def time_shape(client, params: dict, repeat: int) -> dict:
    from datetime import timedelta

    from django.utils import timezone

    month = (timezone.localdate() - timedelta(days=30)).isoformat()
    query = {"page_size": 100, **{k: month if v == "MONTH" else v for k, v in params.items()}}
    first = client.get("/api/v1/jobs/", query)
    assert first.status_code == 200, first.content[:300]
    laps = []
    for _ in range(repeat):
        began = time.perf_counter()
        answer = client.get("/api/v1/jobs/", query)
        laps.append((time.perf_counter() - began) * 1000)
        assert answer.status_code == 200
    laps.sort()
    return {"count": first.json()["count"], "rows": len(first.json()["results"]),
            "median_ms": round(statistics.median(laps), 1),
            "p95_ms": round(laps[int(len(laps) * 0.95) - 1], 1),
            "max_ms": round(laps[-1], 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--server", default="postgresql://postgres@127.0.0.1:5432")
    args = parser.parse_args()
    setup(args.server)
    began = time.perf_counter()
    admin, researcher = populate(args.jobs)
    print(f"stored {args.jobs} ended jobs in {time.perf_counter() - began:.1f} s")
    from rest_framework.test import APIClient

    figures = {}
    for who, user in (("admin", admin), ("researcher", researcher)):
        client = APIClient()
        client.force_authenticate(user)
        for shape, params in SHAPES.items():
            result = time_shape(client, params, args.repeat)
            figures[f"{who}: {shape}"] = result
            print(f"{who:10} {shape:30} {result['count']:>6} jobs, first {result['rows']:>3}: "
                  f"median {result['median_ms']} ms, p95 {result['p95_ms']} ms, "
                  f"max {result['max_ms']} ms")  # fmt: skip
    worst = max(result["p95_ms"] for result in figures.values())
    print(json.dumps({"jobs": args.jobs, "worst_p95_ms": worst, "target_ms": 200,
                      "figures": figures}))  # fmt: skip


if __name__ == "__main__":
    main()
