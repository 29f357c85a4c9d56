"""End-to-end benchmark of the portal on PostgreSQL + Redis + Celery (`make bench-portal`).

KAI's scale-test shape, through the REST API: 500 simulated nodes of 8 GPUs, 100 projects of
quota 40, 4,000 single-GPU jobs. It creates a fresh database `allot_bench`, starts the web
process(es) (daphne) and a Celery worker and beat as in docker-compose.yml, submits the jobs from
client threads, and waits until every job is Running. Then it times single cycles in-process on
that state: a steady cycle (nothing to do) and a fill cycle (all 4,000 pending again at once).

Prints one line per figure and, last, one JSON object:
`submit_s`, `submit_jobs_per_s`, `end_to_end_s` (first POST -> all Running),
`steady_cycle` and `fill_cycle` (snapshot_s, plan_s, commit_s, total_s).
Targets (issue 4): end to end < 40 s; one cycle < 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
DATABASE = "allot_bench"
REDIS_URL = "redis://127.0.0.1:6379/13"  # a database of its own: the benchmark flushes it


def environment() -> dict:
    """The production-like environment of every process (Postgres, Redis, simulated agent)."""
    return dict(
        os.environ,
        DATABASE_URL=f"{PG}/{DATABASE}",
        REDIS_URL=REDIS_URL,
        ALLOT_SIM_START_DELAY_S="0",
        ALLOT_EMBEDDED_CYCLE="0",
        DEBUG="0",
        SECRET_KEY="benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
        SECURE_SSL_REDIRECT="0",
        ALLOWED_HOSTS="127.0.0.1,localhost",
        LOG_LEVEL="WARNING",
        PYTHONPATH=str(ROOT),
    )


def manage(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment(),
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def fresh_database() -> str:
    """Drop and create `allot_bench`, migrate it, and return an admin's API token."""
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")
        connection.execute(f"CREATE DATABASE {DATABASE}")
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    manage("migrate", "--noinput")
    admin = "User.objects.create_superuser('bench', 'bench@example.com', 'bench-pass-123')"
    manage("shell", "-c", f"from django.contrib.auth.models import User; {admin}")
    return manage("issue_token", "bench").strip().splitlines()[-1]


class Processes:
    """The web process(es), the worker and beat, stopped together at the end."""

    def __init__(self, web: int, concurrency: int, logs: Path):
        self.ports = [18000 + i for i in range(web)]
        self.logs = logs
        commands = [
            ["daphne", "--bind", "127.0.0.1", "--port", str(port), "portal.asgi:application"]
            for port in self.ports
        ]
        commands += [
            ["celery", "--app", "portal", "worker", "--loglevel", "WARNING",
             "--concurrency", str(concurrency), "--without-gossip", "--without-mingle"],
            ["celery", "--app", "portal", "beat", "--loglevel", "WARNING",
             "--schedule", str(logs / "beat-schedule")],
        ]  # fmt: skip
        self.procs = [self._spawn(i, command) for i, command in enumerate(commands)]

    def _spawn(self, i: int, command: list[str]) -> subprocess.Popen:
        binary = Path(sys.executable).parent / command[0]
        log = open(self.logs / f"{i}-{command[0]}.log", "w")  # noqa: SIM115 (closed with the process)
        return subprocess.Popen(
            [str(binary), *command[1:]], cwd=ROOT, env=environment(), stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip

    def wait_ready(self, token: str) -> None:
        for port in self.ports:
            for _ in range(100):
                try:
                    call(f"http://127.0.0.1:{port}", token, "GET", "/api/v1/overview/")
                    break
                except OSError:
                    time.sleep(0.2)
            else:
                raise SystemExit(f"the web process on :{port} did not answer; see {self.logs}")

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def call(base: str, token: str, method: str, path: str, body: dict | None = None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", f"Token {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


def post_all(bases: list[str], token: str, path: str, bodies: list[dict], threads: int) -> None:
    """POST every body, spread over the web processes from `threads` client threads."""
    errors: list[str] = []

    def post(indexed):
        i, body = indexed
        try:
            call(bases[i % len(bases)], token, "POST", path, body)
        except urllib.error.HTTPError as exc:
            errors.append(f"{exc.code} {exc.read()[:200]!r}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(post, enumerate(bodies)))
    if errors:
        raise SystemExit(f"{len(errors)} POST {path} failed, first: {errors[0]}")


def count_running(base: str, token: str) -> int:
    return call(base, token, "GET", "/api/v1/jobs/?status=Running&page_size=1")["count"]


def time_cycles() -> dict:
    """Steady and fill cycles, in this process, on the benchmark database."""
    os.environ.update(environment())
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from portal.jobs.models import Job, Status
    from portal.scheduling.cycle import run_cycle

    def timed() -> dict:
        clock = time.perf_counter()
        result = run_cycle(wait=True)
        figures = {key: round(value, 3) for key, value in result.timings.items()}
        figures.update(total_s=round(time.perf_counter() - clock, 3),
                       decisions=len(result.decisions), status=result.status)  # fmt: skip
        return figures

    run_cycle(wait=True)  # this process's agent learns the running jobs (reconciliation)
    steady = timed()
    Job.objects.update(status=Status.PENDING, placement=[], started_at=None)
    fill = timed()
    return {"steady_cycle": steady, "fill_cycle": fill}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--web", type=int, default=2, help="web processes (daphne)")
    parser.add_argument("--concurrency", type=int, default=1, help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="client threads")
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)

    token = fresh_database()
    logs = Path(tempfile.mkdtemp(prefix="allot-bench-"))
    procs = Processes(args.web, args.concurrency, logs)
    try:
        procs.wait_ready(token)
        bases = [f"http://127.0.0.1:{port}" for port in procs.ports]
        quota = args.nodes * args.gpus_per_node / args.projects
        nodes = [{"name": f"node-{i:04d}", "gpus": args.gpus_per_node} for i in range(args.nodes)]
        projects = [{"name": f"project-{i:03d}", "quota": quota} for i in range(args.projects)]
        post_all(bases, token, "/api/v1/nodes/", nodes, args.threads)
        post_all(bases, token, "/api/v1/projects/", projects, args.threads)
        jobs = [
            {"project": f"project-{i % args.projects:03d}", "name": f"job-{i:05d}", "gpus": 1}
            for i in range(args.jobs)
        ]
        start = time.perf_counter()
        post_all(bases, token, "/api/v1/jobs/", jobs, args.threads)
        submitted = time.perf_counter() - start
        print(f"submitted {args.jobs} jobs in {submitted:.1f} s ({args.jobs / submitted:.0f}/s)")
        running = 0
        while running < args.jobs and time.perf_counter() - start < args.timeout:
            time.sleep(0.25)
            running = count_running(bases[0], token)
        end_to_end = time.perf_counter() - start
        print(f"{running}/{args.jobs} Running after {end_to_end:.1f} s (target < 40 s)")
    finally:
        procs.stop()
    cycles = time_cycles()
    for name, figures in cycles.items():
        print(f"{name}: {figures} (target total < 3 s)")
    summary = {
        "nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "projects": args.projects,
        "jobs": args.jobs, "running": running, "web_processes": args.web,
        "submit_s": round(submitted, 2), "submit_jobs_per_s": round(args.jobs / submitted, 1),
        "end_to_end_s": round(end_to_end, 2), **cycles,
    }  # fmt: skip
    print(json.dumps(summary))
    return 0 if running == args.jobs else 1


if __name__ == "__main__":
    sys.exit(main())
