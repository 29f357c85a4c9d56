"""The production stack the portal benchmarks run, as in docker-compose.yml, on this machine.

A fresh PostgreSQL database and a Redis database of the benchmark's own; the web tier (gunicorn
with uvicorn workers, serving HTTP and websockets), a Celery worker and beat; the simulated
agent. `Stack.start()` returns an admin's API token once every process answers; `stop()` ends
them all.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PG = "postgres://postgres@127.0.0.1:5432"
PORT = 18000


def add_shape_arguments(parser) -> None:
    """KAI's scale-test shape (500 nodes x 8 GPUs, 100 projects, 4,000 jobs) and the web
    workers, the options every portal benchmark of that shape takes."""
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--gpus-per-node", type=int, default=8)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--web", type=int, default=3, help="web worker processes (gunicorn)")


def call(base: str, token: str, method: str, path: str, body: dict | None = None):
    """One JSON request to the portal at `base` as `token`; the decoded answer."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", f"Token {token}")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=120) as response:
        raw = response.read()
        return json.loads(raw) if raw else None


class Stack:
    """Web workers, a Celery worker and beat on database `database` and Redis `redis_url`."""

    def __init__(self, database: str, redis_url: str, web: int = 3, concurrency: int = 1,
                 port: int = PORT, env: dict[str, str] | None = None,
                 pg: str = PG):  # fmt: skip
        self.database, self.redis_url, self.pg = database, redis_url, pg
        self.web, self.concurrency = web, concurrency
        self.port, self.extra_env = port, dict(env or {})
        self.base = f"http://127.0.0.1:{port}"
        self.logs = Path(tempfile.mkdtemp(prefix=f"allot-{database}-"))
        self.procs: list[subprocess.Popen] = []

    def environment(self) -> dict:
        """The production-like environment of every process (Postgres, Redis, simulated agent),
        with the stack's `env` on top (e.g. ALLOT_AGENT=kubernetes and KUBECONFIG)."""
        environment = dict(
            os.environ,
            DATABASE_URL=f"{self.pg}/{self.database}",
            REDIS_URL=self.redis_url,
            ALLOT_SIM_START_DELAY_S="0",
            ALLOT_EMBEDDED_CYCLE="0",
            DEBUG="0",
            SECRET_KEY="benchmark-only-secret-key-0123456789-abcdefghijklmnopqrstuvwxyz",
            SECURE_SSL_REDIRECT="0",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            LOG_LEVEL="WARNING",
            PYTHONPATH=str(ROOT),
            # the scale shapes submit 4,000 jobs as one user: past the per-user limits a lab
            # keeps by default (docs/security.md, "What one researcher may queue")
            ALLOT_SUBMIT_RATE="1000000/min",
            ALLOT_MAX_PENDING_PER_USER="1000000",
            ALLOT_MAX_PENDING_PER_PROJECT="1000000",
        )
        return environment | self.extra_env

    def manage(self, *args: str) -> str:
        """`manage.py *args` in the stack's environment; its output (exit on failure)."""
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.environment(),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode:
            raise SystemExit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
        return done.stdout

    def fresh_database(self) -> str:
        """Drop and create the database, flush Redis, migrate; an admin's API token."""
        import psycopg
        import redis

        with psycopg.connect(f"{self.pg}/postgres", autocommit=True) as connection:
            connection.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")
            connection.execute(f"CREATE DATABASE {self.database}")
        redis.Redis.from_url(self.redis_url).flushdb()
        self.manage("migrate", "--noinput")
        admin = "User.objects.create_superuser('bench', 'bench@example.com', 'bench-pass-123')"
        self.manage("shell", "-c", f"from django.contrib.auth.models import User; {admin}")
        return self.manage("issue_token", "bench").strip().splitlines()[-1]

    def start(self) -> str:
        """A fresh database, then every process; the admin's token once the web tier answers."""
        token = self.fresh_database()
        self.commands = [
            ["gunicorn", "portal.asgi:application",
             "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", str(self.web),
             "--bind", f"127.0.0.1:{self.port}", "--log-level", "warning"],
            ["celery", "--app", "portal", "worker", "--loglevel", "WARNING",
             "--concurrency", str(self.concurrency), "--without-gossip", "--without-mingle"],
            ["celery", "--app", "portal", "beat", "--loglevel", "WARNING",
             "--schedule", str(self.logs / "beat-schedule")],
        ]  # fmt: skip
        self.procs = [self._spawn(i, command) for i, command in enumerate(self.commands)]
        self._wait_ready(token)
        return token

    def restart(self, part: str, signal_number: int = 9) -> None:
        """Kill `part` (web, worker or beat) with `signal_number`, its children too (a crash:
        kill -9 of a Celery worker leaves its pool processes), and start it again."""
        import psutil

        i = ("web", "worker", "beat").index(part)
        root = psutil.Process(self.procs[i].pid)
        for process in [*root.children(recursive=True), root]:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.send_signal(signal_number)
        self.procs[i].wait(20)
        self.procs[i] = self._spawn(i, self.commands[i])

    def _spawn(self, i: int, command: list[str]) -> subprocess.Popen:
        binary = Path(sys.executable).parent / command[0]
        log = open(self.logs / f"{i}-{command[0]}.log", "a")  # noqa: SIM115 (closed with the process)
        return subprocess.Popen(
            [str(binary), *command[1:]], cwd=ROOT, env=self.environment(), stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip

    def _wait_ready(self, token: str) -> None:
        for _ in range(150):
            try:
                call(self.base, token, "GET", "/api/v1/overview/")
                return
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"the web tier on :{self.port} did not answer; see {self.logs}")

    def cpu_seconds(self) -> dict[str, float]:
        """CPU seconds used so far by each part: the web tier, the Celery worker, beat (each with
        its child processes) and every PostgreSQL process (call it before `stop`)."""
        import psutil

        def used(process) -> float:
            times = process.cpu_times()
            return times.user + times.system

        def tree(pid: int) -> float:
            try:
                root = psutil.Process(pid)
                return used(root) + sum(used(child) for child in root.children(recursive=True))
            except psutil.NoSuchProcess:
                return 0.0

        parts = dict(zip(("web", "worker", "beat"), (tree(p.pid) for p in self.procs), strict=True))
        # Read with the process list: a backend may end between the two (no NoSuchProcess).
        postgres = [p.info["cpu_times"] for p in psutil.process_iter(["name", "cpu_times"])
                    if p.info["name"] == "postgres" and p.info["cpu_times"]]  # fmt: skip
        parts["postgres"] = sum(times.user + times.system for times in postgres)
        return {name: round(seconds, 1) for name, seconds in parts.items()}

    def stop(self) -> None:
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
