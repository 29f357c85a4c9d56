"""Twenty REST clients at once (`make bench-load`), on PostgreSQL + Redis as in docker-compose.

Each client is a researcher of a project of its own with its own token; for `--seconds` it
submits a job (a short simulated run, so the cluster keeps scheduling) and lists its project's
jobs, by turns, as fast as answers come. Meanwhile the Celery worker and beat run cycles as in
production (`stack.py`). Every request's latency is kept; a non-2xx answer or a failed request
is an error.

Prints a line per request kind and, last, one JSON object with `requests`, `errors`,
`requests_per_s`, `p50_ms`, `p95_ms`, `p99_ms`, `max_ms`, the CPU seconds of each part and
the web tier's CPU milliseconds per request (issue 39), and the figures per kind.
Target (issue 25): p95 < 300 ms with 0 errors.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
import urllib.error
from collections import defaultdict

from stack import Stack, call

DATABASE = "allot_load"
REDIS_URL = "redis://127.0.0.1:6379/11"  # a database of its own: the benchmark flushes it


def researchers(stack: Stack, admin: str, clients: int) -> list[tuple[str, str]]:
    """A project and a researcher with a token for each client: [(project, token)]."""
    for i in range(16):
        call(stack.base, admin, "POST", "/api/v1/nodes/", {"name": f"node-{i:02d}", "gpus": 8})
    made = []
    for i in range(clients):
        project, user = f"team-{i:02d}", f"researcher-{i:02d}"
        call(stack.base, admin, "POST", "/api/v1/projects/", {"name": project, "quota": 4})
        call(stack.base, admin, "POST", "/api/v1/users/",
             {"username": user, "password": f"load-pass-{i:02d}-xyz"})  # fmt: skip
        call(stack.base, admin, "POST", f"/api/v1/projects/{project}/members/",
             {"username": user, "role": "researcher"})  # fmt: skip
        made.append((project, stack.manage("issue_token", user).strip().splitlines()[-1]))
    return made


def client(base: str, project: str, token: str, until: float, seen: dict, lock) -> None:
    """Submit and list by turns until `until`, noting (kind, ms, ok) of every request."""
    number = 0
    while time.monotonic() < until:
        number += 1
        for kind, method, path, body in (
            ("submit", "POST", "/api/v1/jobs/",
             {"project": project, "name": f"job-{number:05d}", "gpus": 1, "sim_duration_s": 20}),
            ("list", "GET", f"/api/v1/jobs/?project={project}&page_size=50", None),
        ):  # fmt: skip
            began = time.perf_counter()
            try:
                call(base, token, method, path, body)
                ok = True
            except (urllib.error.URLError, OSError):
                ok = False
            with lock:
                seen[kind].append(((time.perf_counter() - began) * 1000, ok))


def figures(samples: list[tuple[float, bool]], seconds: float) -> dict:
    times = sorted(ms for ms, _ in samples)
    cuts = statistics.quantiles(times, n=100, method="inclusive") if len(times) > 1 else times * 99
    return {
        "requests": len(times), "errors": sum(1 for _, ok in samples if not ok),
        "requests_per_s": round(len(times) / seconds, 1), "p50_ms": round(cuts[49], 1),
        "p95_ms": round(cuts[94], 1), "p99_ms": round(cuts[98], 1), "max_ms": round(times[-1], 1),
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--web", type=int, default=3, help="web worker processes (gunicorn)")
    args = parser.parse_args(argv)

    stack = Stack(DATABASE, REDIS_URL, web=args.web)
    admin = stack.start()
    seen: dict[str, list] = defaultdict(list)
    lock = threading.Lock()
    try:
        teams = researchers(stack, admin, args.clients)
        before = stack.cpu_seconds()
        until = time.monotonic() + args.seconds
        threads = [threading.Thread(target=client, args=(stack.base, p, t, until, seen, lock))
                   for p, t in teams]  # fmt: skip
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        after = stack.cpu_seconds()
    finally:
        stack.stop()
    cpu = {part: round(after[part] - before[part], 1) for part in after}
    print(f"CPU seconds during the load: {cpu}")
    kinds = {kind: figures(samples, args.seconds) for kind, samples in seen.items()}
    answered = sum(len(samples) for samples in seen.values())
    web_ms = round(cpu["web"] * 1000 / answered, 1) if answered else None
    print(f"web CPU per request: {web_ms} ms (issue 39: at most 4)")
    for kind, numbers in kinds.items():
        print(f"{kind}: {numbers}")
    summary = {"clients": args.clients, "seconds": args.seconds, "web_processes": args.web,
               **figures([s for samples in seen.values() for s in samples], args.seconds),
               "cpu_s": cpu, "web_cpu_ms_per_request": web_ms, "kinds": kinds}  # fmt: skip
    print(json.dumps(summary))
    return 0 if summary["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
