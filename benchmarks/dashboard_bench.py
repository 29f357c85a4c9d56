"""Benchmarks of the dashboards (`make bench-dashboards`), on PostgreSQL and Redis.

1. Analytics: 100 projects with 30 days of usage of GPUs, CPU and memory (5-minute and hourly
   rollups, and the last two hours of raw 10-second samples), then the query of
   `GET /api/v1/analytics/allocation/` (`portal.dashboards.analytics.allocation`) over 30 days,
   7 days, 24 hours and 1 hour. Target: 30 days under 300 ms.
2. Websocket fan-out: a daphne web process on Redis's channel layer with 50 signed-in browsers'
   websockets (`/ws/overview/`, 10 projects, each user a viewer of one); this process runs
   scheduling cycles that start one job each, and every client's latency from the cycle's commit
   to the overview arriving is measured. Target: p95 under 500 ms.

Prints one line per figure and, last, one JSON object with all of them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
DATABASE = "allot_bench_dashboards"
REDIS_URL = "redis://127.0.0.1:6379/12"  # a database of its own: the benchmark flushes it
SECRET = "benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz"


def environment() -> dict:
    return dict(
        os.environ, DATABASE_URL=f"{PG}/{DATABASE}", REDIS_URL=REDIS_URL, DEBUG="0",
        SECRET_KEY=SECRET, SECURE_SSL_REDIRECT="0", ALLOWED_HOSTS="127.0.0.1,localhost",
        ALLOT_EMBEDDED_CYCLE="0", ALLOT_SIM_START_DELAY_S="0", LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )  # fmt: skip


def fresh_database() -> None:
    import psycopg
    import redis

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {DATABASE}")
    redis.Redis.from_url(REDIS_URL).flushdb()
    subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v0"], cwd=ROOT,
                   env=environment(), check=True)  # fmt: skip


def setup_django() -> None:
    os.environ.update(environment(), DJANGO_SETTINGS_MODULE="portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


# --- 1. analytics -----------------------------------------------------------------------------

FILL_ROLLUPS = """
INSERT INTO jobs_usagerollup (resolution_s, bucket, project_id, samples, quota_sum,
    fair_share_sum, allocated_sum, running_sum, pending_sum, utilization_sum,
    utilization_samples, idle_sum, cpu_millis_sum, memory_bytes_sum, simulated)
SELECT r.res, b, p.id, r.res / 10, 4.0 * r.res / 10, 4.5 * r.res / 10,
       (random() * 8) * r.res / 10, (random() * 8) * r.res / 10, (random() * 3) * r.res / 10,
       (0.5 + random() / 2) * r.res / 10, r.res / 10, random() * r.res / 10,
       (random() * 64000) * r.res / 10, (random() * 524288) * r.res / 10, true
FROM tenancy_project p
CROSS JOIN (VALUES (300), (3600)) AS r(res)
CROSS JOIN LATERAL generate_series(
    to_timestamp(floor(extract(epoch FROM %(start)s::timestamptz) / r.res) * r.res),
    %(end)s::timestamptz, make_interval(secs => r.res)) AS b
"""
FILL_SAMPLES = """
INSERT INTO jobs_usagesample (time, project_id, quota, fair_share, allocated_gpus, running_jobs,
    pending_jobs, utilization, idle_gpus, allocated_cpu_millis, allocated_memory_bytes, simulated)
SELECT t, p.id, 4, 4.5, random() * 8, (random() * 8)::int, (random() * 3)::int,
       0.5 + random() / 2, random(), (random() * 64000)::bigint, (random() * 524288)::bigint, true
FROM tenancy_project p
CROSS JOIN generate_series(%(start)s::timestamptz, %(end)s::timestamptz, interval '10 seconds') t
"""


def bench_analytics(projects: int, repeat: int) -> dict:
    from django.db import connection

    from portal.dashboards import analytics
    from portal.tenancy.models import Project

    Project.objects.bulk_create(Project(name=f"p{i:03d}", quota=4) for i in range(projects))
    end = datetime.now(UTC)
    lap = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(FILL_ROLLUPS, {"start": end - timedelta(days=30), "end": end})
        cursor.execute(FILL_SAMPLES, {"start": end - timedelta(hours=2), "end": end})
        cursor.execute("ANALYZE jobs_usagerollup; ANALYZE jobs_usagesample")
        cursor.execute("SELECT count(*) FROM jobs_usagerollup")
        rollups = cursor.fetchone()[0]
    print(f"filled {rollups:,} rollup rows in {time.perf_counter() - lap:.1f} s")
    figures = {"rollup_rows": rollups}
    for label, span in (("30d", timedelta(days=30)), ("7d", timedelta(days=7)),
                        ("24h", timedelta(hours=24)), ("1h", timedelta(hours=1))):  # fmt: skip
        start = end - span
        step = analytics.auto_step(start, end, 10)
        times = []
        for _ in range(repeat + 1):
            lap = time.perf_counter()
            series = analytics.allocation(start, end, step, None)
            times.append(time.perf_counter() - lap)
        times = times[1:]  # the first run warms the caches
        points = len(series.times) * len(series.projects)
        figures[f"analytics_{label}_ms"] = round(1000 * statistics.median(times), 1)
        median, worst = 1000 * statistics.median(times), 1000 * max(times)
        print(f"analytics {label:>3}: step {step:>5} s, {series.source:>13}, {points:>6} values,"
              f" median {median:6.1f} ms, max {worst:6.1f} ms")  # fmt: skip
    return figures


# --- 2. websocket fan-out ---------------------------------------------------------------------


def session_cookie(user) -> str:
    """A signed-in session for `user`, stored where the web process reads it (the database)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key


class Client(threading.Thread):
    """One browser's websocket: records when each message arrived."""

    def __init__(self, url: str, origin: str, session: str):
        super().__init__(daemon=True)
        import websocket

        self.socket = websocket.create_connection(url, cookie=f"sessionid={session}",
                                                  origin=origin, timeout=30)  # fmt: skip
        self.arrivals: list[float] = []
        self.names: set[str] = set()

    def run(self) -> None:
        try:
            while True:
                message = json.loads(self.socket.recv())
                self.arrivals.append(time.perf_counter())
                self.names |= {job["name"] for job in message["overview"]["running"]}
        except Exception:
            return


def start_web(port: int, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port),
             "portal.asgi:application"],
            cwd=ROOT, env=environment(), stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    import urllib.request

    for _ in range(150):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz/", timeout=2)
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"daphne did not start:\n{log.read_text()[-2000:]}")


def bench_websockets(clients: int, rounds: int, port: int) -> dict:
    from django.contrib.auth import get_user_model

    from portal.cluster.models import Node
    from portal.jobs.services import submit_job
    from portal.scheduling import cycle
    from portal.tenancy.models import Membership, Project

    Node.objects.bulk_create(Node(name=f"node-{i:02d}", gpus=8) for i in range(20))
    projects = list(Project.objects.order_by("name")[:10])
    users = []
    for i in range(clients):
        user = get_user_model().objects.create_user(f"viewer{i:02d}", password="unused-pass-1")
        Membership.objects.create(user=user, project=projects[i % 10], role="viewer")
        users.append(user)
    admin = get_user_model().objects.create_superuser("bench-admin", "a@example.com", "x-pass-1")
    log = Path(tempfile.mkdtemp()) / "daphne.log"
    web = start_web(port, log)
    try:
        origin = f"http://127.0.0.1:{port}"
        sockets = [Client(f"ws://127.0.0.1:{port}/ws/overview/", origin, session_cookie(user))
                   for user in users]  # fmt: skip
        for client in sockets:
            client.start()
        time.sleep(2)  # every client got its first overview
        committed: list[float] = []
        carry_out = cycle._carry_out

        def timed_carry_out(agent, result):
            committed.append(time.perf_counter())  # the commit has just returned
            carry_out(agent, result)

        cycle._carry_out = timed_carry_out
        latencies = []
        for i in range(rounds):
            submit_job(admin, projects[i % 10], name=f"job-{i:03d}", gpus=1)
            before = len(committed)
            cycle.run_cycle(wait=True)
            commit = committed[before]
            time.sleep(1.5)  # the overview goes out at most once a second
            for client in sockets:
                after = [t for t in client.arrivals if t >= commit]
                if after:
                    latencies.append(after[0] - commit)
        missed = rounds * clients - len(latencies)
        own = {user.pk: projects.index(Membership.objects.get(user=user).project) for user in users}
        leaked = sum(
            1 for client, user in zip(sockets, users, strict=True)
            for name in client.names
            if int(name.split("-")[1]) % 10 != own[user.pk]
        )  # fmt: skip
    finally:
        web.terminate()
        web.wait(10)
    latencies.sort()
    p95 = latencies[int(0.95 * (len(latencies) - 1))] if latencies else float("nan")
    figures = {
        "ws_clients": clients, "ws_rounds": rounds, "ws_messages": len(latencies),
        "ws_missed": missed, "ws_foreign_job_names": leaked,
        "ws_p50_ms": round(1000 * statistics.median(latencies), 1) if latencies else None,
        "ws_p95_ms": round(1000 * p95, 1), "ws_max_ms": round(1000 * max(latencies), 1),
    }  # fmt: skip
    print(f"websockets: {clients} clients x {rounds} cycles, {len(latencies)} messages "
          f"({missed} missed, {leaked} foreign job names): p50 {figures['ws_p50_ms']} ms, "
          f"p95 {figures['ws_p95_ms']} ms, max {figures['ws_max_ms']} ms")  # fmt: skip
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--port", type=int, default=8791)
    args = parser.parse_args(argv)
    fresh_database()
    setup_django()
    figures = bench_analytics(args.projects, args.repeat)
    figures |= bench_websockets(args.clients, args.rounds, args.port)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
