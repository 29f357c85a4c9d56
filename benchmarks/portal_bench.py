"""End-to-end benchmark of the portal on PostgreSQL + Redis + Celery (`make bench-portal`).

KAI's scale-test shape, through the REST API: 500 simulated nodes of 8 GPUs, 100 projects of
quota 40, 4,000 single-GPU jobs. It creates a fresh database `allot_bench`, starts the stack of
docker-compose.yml (`stack.py`: gunicorn with uvicorn workers, a Celery worker and beat),
submits the jobs from client threads - one POST each, as KAI's test creates one pod each, or
with `--bulk N` N jobs a request through `POST /api/v1/jobs/bulk/` (a sweep) - and waits until
every job is Running. Then it times single cycles in-process on that state: a steady cycle
(nothing to do) and a fill cycle (all 4,000 pending again at once).

With `--resources` (issue 26) every node has allocatable CPU and memory (16 cores and 128 GiB per
GPU) and every job asks for 8 cores and 64 GiB beside its GPU, the shape of
`scheduler_tools.bench --resources`, so the cycle places on every resource.

Prints one line per figure and, last, one JSON object:
`submit_s`, `submit_jobs_per_s`, `end_to_end_s` (first POST -> all Running),
`steady_cycle` and `fill_cycle` (the cycle's timings and total_s).
Targets (issue 25): end to end < 40 s and at least 5x faster than Slurm here (177 s); one
cycle < 3 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.error
from concurrent.futures import ThreadPoolExecutor

from stack import ROOT, Stack, add_shape_arguments, call

DATABASE = "allot_bench"
REDIS_URL = "redis://127.0.0.1:6379/13"  # a database of its own: the benchmark flushes it


def post_all(base: str, token: str, path: str, bodies: list[dict], threads: int) -> None:
    """POST every body from `threads` client threads."""
    errors: list[str] = []

    def post(body):
        try:
            call(base, token, "POST", path, body)
        except urllib.error.HTTPError as exc:
            errors.append(f"{exc.code} {exc.read()[:200]!r}")

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(post, bodies))
    if errors:
        raise SystemExit(f"{len(errors)} POST {path} failed, first: {errors[0]}")


def count_running(base: str, token: str) -> int:
    return call(base, token, "GET", "/api/v1/jobs/?status=Running&page_size=1")["count"]


def time_cycles(stack: Stack) -> dict:
    """Steady and fill cycles, in this process, on the benchmark database."""
    os.environ.update(stack.environment())
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
    add_shape_arguments(parser)
    parser.add_argument("--concurrency", type=int, default=1, help="worker processes")
    parser.add_argument("--threads", type=int, default=8, help="client threads")
    parser.add_argument("--bulk", type=int, default=0,
                        help="jobs per request through jobs/bulk/ (0: one POST a job)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=300)
    parser.add_argument(
        "--resources", action="store_true", help="nodes with CPU and memory, jobs asking for both"
    )
    args = parser.parse_args(argv)

    stack = Stack(DATABASE, REDIS_URL, web=args.web, concurrency=args.concurrency)
    token = stack.start()
    try:
        before = stack.cpu_seconds()
        running, submitted, end_to_end = fill(stack.base, token, args)
        after = stack.cpu_seconds()
    finally:
        stack.stop()
    cpu = {part: round(after[part] - before[part], 1) for part in after}
    print(f"CPU seconds from the first POST to all Running: {cpu}")
    cycles = time_cycles(stack)
    for name, figures in cycles.items():
        print(f"{name}: {figures} (target total < 3 s)")
    summary = {
        "nodes": args.nodes, "gpus_per_node": args.gpus_per_node, "projects": args.projects,
        "jobs": args.jobs, "running": running, "web_processes": args.web, "bulk": args.bulk,
        "resources": args.resources,
        "submit_s": round(submitted, 2), "submit_jobs_per_s": round(args.jobs / submitted, 1),
        "end_to_end_s": round(end_to_end, 2), "cpu_s": cpu, **cycles,
    }  # fmt: skip
    print(json.dumps(summary))
    return 0 if running == args.jobs else 1


def fill(base: str, token: str, args) -> tuple[int, float, float]:
    """Nodes and projects, then every job; (jobs Running, seconds to submit, to all Running)."""
    quota = args.nodes * args.gpus_per_node / args.projects
    node_extra, job_extra = {}, {}
    if args.resources:  # as scheduler_tools.bench --resources: 16 cores, 128 GiB a GPU
        gpus = args.gpus_per_node
        node_extra = {"cpu": str(16 * gpus), "memory": f"{128 * gpus}Gi"}
        job_extra = {"cpu": "8", "memory": "64Gi"}
    nodes = [
        {"name": f"node-{i:04d}", "gpus": args.gpus_per_node, **node_extra}
        for i in range(args.nodes)
    ]
    projects = [{"name": f"project-{i:03d}", "quota": quota} for i in range(args.projects)]
    post_all(base, token, "/api/v1/nodes/", nodes, args.threads)
    post_all(base, token, "/api/v1/projects/", projects, args.threads)
    jobs = [
        {"project": f"project-{i % args.projects:03d}", "name": f"job-{i:05d}", "gpus": 1,
         **job_extra}
        for i in range(args.jobs)
    ]  # fmt: skip
    if args.bulk:
        path, bodies = (
            "/api/v1/jobs/bulk/",
            [{"jobs": jobs[i : i + args.bulk]} for i in range(0, len(jobs), args.bulk)],
        )
    else:
        path, bodies = "/api/v1/jobs/", jobs
    start = time.perf_counter()
    post_all(base, token, path, bodies, args.threads)
    submitted = time.perf_counter() - start
    print(f"submitted {args.jobs} jobs in {submitted:.1f} s ({args.jobs / submitted:.0f}/s)")
    running = 0
    while running < args.jobs and time.perf_counter() - start < args.timeout:
        time.sleep(0.25)
        running = count_running(base, token)
    end_to_end = time.perf_counter() - start
    print(f"{running}/{args.jobs} Running after {end_to_end:.1f} s (target < 40 s)")
    return running, submitted, end_to_end


if __name__ == "__main__":
    sys.exit(main())
