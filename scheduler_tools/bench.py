"""`python -m scheduler_tools.bench`: time the scheduling core on KAI's scale-test shapes.

Scenarios (docs/rules.md §14):
- ``fill``: every job pending on an empty cluster; one cycle must start them all.
- ``reclaim``: the cluster full of one over-quota project's single-GPU jobs; every other project
  then asks for its quota; cycles until settled.
- ``steady``: a full cluster with every project at its fair share and `--jobs` more jobs pending;
  one cycle that (correctly) decides nothing.

With ``--resources`` (issue 26) every node carries allocatable CPU and memory (16 cores and
128 GiB per GPU, a DGX-like ratio) and every job asks for CPU and memory (8 cores and 64 GiB per
GPU), so each placement checks every resource and the bin-pack scans whole buckets.

The last line of ``--json`` output is one JSON object with the figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from scheduler.apply import apply_plan
from scheduler.cycle import plan_cycle
from scheduler.model import Job, Node, PodPlacement, Policy, Project, Snapshot

CPU_PER_GPU = 16_000  # a node's allocatable millicores per GPU (--resources)
MEMORY_PER_GPU = 128 * 2**30  # a node's allocatable bytes per GPU
JOB_CPU = 8_000  # a 1-GPU job's request
JOB_MEMORY = 64 * 2**30


def _cluster(
    nodes: int, gpus: int, projects: int, resources: bool = False
) -> tuple[tuple[Node, ...], tuple[Project, ...]]:
    total = nodes * gpus
    quota = total / projects
    extra = {"cpu_millis": gpus * CPU_PER_GPU, "memory_bytes": gpus * MEMORY_PER_GPU}
    node_list = tuple(
        Node(f"node-{i:05d}", gpus, **(extra if resources else {})) for i in range(nodes)
    )
    project_list = tuple(Project(f"p{i:03d}", quota, order=i) for i in range(projects))
    return node_list, project_list


def _job(project: str, name: str, order: int, resources: bool, placement=()) -> Job:
    """A single-GPU job, asking for CPU and memory too with `resources`."""
    extra = {"cpu_millis": JOB_CPU, "memory_bytes": JOB_MEMORY} if resources else {}
    return Job(project, name, 1, order=order, placement=placement, **extra)


def fill_snapshot(nodes: int, gpus: int, projects: int, jobs: int, resources=False) -> Snapshot:
    """`jobs` single-GPU jobs spread round-robin over the projects, all pending."""
    node_list, project_list = _cluster(nodes, gpus, projects, resources)
    job_list = tuple(_job(f"p{i % projects:03d}", f"j{i:06d}", i, resources) for i in range(jobs))
    return Snapshot(nodes=node_list, projects=project_list, jobs=job_list)


def _running(project, start, count, nodes, gpus, resources=False):
    """`count` single-GPU jobs of `project` filling devices in node order from slot `start`."""
    jobs = []
    for k in range(count):
        slot = start + k
        node = nodes[slot // gpus]
        placement = (PodPlacement(node.name, (slot % gpus,)),)
        jobs.append(_job(project, f"r{slot:06d}", slot, resources, placement))
    return jobs


def reclaim_snapshot(nodes: int, gpus: int, projects: int, jobs: int, resources=False) -> Snapshot:
    """Project p000 holds every GPU; every other project asks for its quota in 1-GPU jobs."""
    node_list, project_list = _cluster(nodes, gpus, projects, resources)
    total = nodes * gpus
    running = _running("p000", 0, min(jobs, total), node_list, gpus, resources)
    quota = int(total // projects)
    pending = [
        _job(p.name, f"q{i:03d}-{k:06d}", total + i * quota + k, resources)
        for i, p in enumerate(project_list[1:])
        for k in range(quota)
    ]
    return Snapshot(nodes=node_list, projects=project_list, jobs=tuple(running + pending))


def steady_snapshot(nodes: int, gpus: int, projects: int, jobs: int, resources=False) -> Snapshot:
    """Every project holds exactly its quota; `jobs` more single-GPU jobs wait."""
    node_list, project_list = _cluster(nodes, gpus, projects, resources)
    total = nodes * gpus
    quota = total // projects
    running = []
    for i, p in enumerate(project_list):
        running += _running(p.name, i * quota, quota, node_list, gpus, resources)
    pending = [_job(f"p{i % projects:03d}", f"w{i:06d}", total + i, resources) for i in range(jobs)]
    return Snapshot(nodes=node_list, projects=project_list, jobs=tuple(running + pending))


BUILDERS = {"fill": fill_snapshot, "reclaim": reclaim_snapshot, "steady": steady_snapshot}


def run(
    scenario: str, nodes: int, gpus: int, projects: int, jobs: int, max_cycles: int = 50,
    resources: bool = False,
):  # fmt: skip
    """Build the shape, run cycles until one decides nothing (fill: one cycle), time them; with
    `resources`, every node and job carries CPU and memory too."""
    build_start = time.perf_counter()
    snapshot = BUILDERS[scenario](nodes, gpus, projects, jobs, resources)
    build_s = time.perf_counter() - build_start
    policy = Policy()
    started = evicted = cycles = 0
    slowest = 0.0
    total_start = time.perf_counter()
    for _ in range(1 if scenario in ("fill", "steady") else max_cycles):
        t0 = time.perf_counter()
        plan = plan_cycle(snapshot, policy)
        slowest = max(slowest, time.perf_counter() - t0)
        cycles += 1
        started += sum(1 for d in plan.decisions if d.kind == "start")
        evicted += sum(1 for d in plan.decisions if d.kind == "evict")
        if plan.empty:
            break
        snapshot = apply_plan(snapshot, plan)
    total_s = time.perf_counter() - total_start
    running = sum(1 for j in snapshot.jobs if j.running)
    return {
        "scenario": scenario,
        "nodes": nodes,
        "gpus_per_node": gpus,
        "projects": projects,
        "jobs": jobs,
        "resources": resources,
        "started": started,
        "evicted": evicted,
        "running": running,
        "pending": len(snapshot.jobs) - running,
        "cycles": cycles,
        "cycle_s": round(slowest, 4),
        "total_s": round(total_s, 4),
        "build_s": round(build_s, 4),
    }


SWEEP = {
    "fill": [(125, 1000), (250, 2000), (500, 4000)],
    "reclaim": [(125, 1000), (250, 2000), (500, 4000)],
    "steady": [(500, 2500), (1000, 5000), (2000, 10000)],
}


def sweep(gpus: int, projects: int, resources: bool = False) -> list[dict]:
    """Each shape at three sizes (nodes and jobs doubling), to show how cost grows."""
    rows = []
    for scenario, sizes in SWEEP.items():
        for nodes, jobs in sizes:
            rows.append(run(scenario, nodes, gpus, projects, jobs, resources=resources))
    return rows


def parser() -> argparse.ArgumentParser:
    """The command line (docs/scheduling.md)."""
    p = argparse.ArgumentParser(
        prog="python -m scheduler_tools.bench",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--scenario", choices=sorted(BUILDERS), default="fill")
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--projects", type=int, default=100)
    p.add_argument("--jobs", type=int, default=4000)
    p.add_argument("--json", action="store_true", help="end with one JSON object")
    p.add_argument("--sweep", action="store_true", help="every shape at three sizes")
    p.add_argument(
        "--resources",
        action="store_true",
        help="nodes carry allocatable CPU and memory and every job asks for both (issue 26)",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, print a summary (and JSON with --json)."""
    args = parser().parse_args(argv)
    if args.sweep:
        print_sweep(sweep(args.gpus_per_node, args.projects, args.resources), args.json)
        return 0
    result = run(
        args.scenario, args.nodes, args.gpus_per_node, args.projects, args.jobs,
        resources=args.resources,
    )  # fmt: skip
    print_run(result, args.json)
    return 0


def print_sweep(rows: list[dict], as_json: bool) -> None:
    """One line per shape and size; with `as_json`, then every row as one JSON list."""
    print(
        f"{'scenario':<9}{'nodes':>7}{'jobs':>7}{'started':>9}{'evicted':>9}"
        f"{'cycles':>7}{'slowest s':>11}{'total s':>9}"
    )
    for r in rows:
        print(
            f"{r['scenario']:<9}{r['nodes']:>7}{r['jobs']:>7}{r['started']:>9}"
            f"{r['evicted']:>9}{r['cycles']:>7}{r['cycle_s']:>11.3f}{r['total_s']:>9.3f}"
        )
    if as_json:
        print(json.dumps(rows))


def print_run(result: dict, as_json: bool) -> None:
    """One sentence (on stderr with `as_json`, whose JSON object is then the last line)."""
    print(
        f"{result['scenario']}: {result['nodes']} nodes x {result['gpus_per_node']} GPUs, "
        f"{result['projects']} projects, {result['jobs']} jobs"
        f"{' with CPU and memory' if result['resources'] else ''} -> started {result['started']}, "
        f"evicted {result['evicted']} in {result['cycles']} cycle(s); slowest cycle "
        f"{result['cycle_s']:.3f} s, total {result['total_s']:.3f} s",
        file=sys.stderr if as_json else sys.stdout,
    )
    if as_json:
        print(json.dumps(result))


if __name__ == "__main__":
    sys.exit(main())
