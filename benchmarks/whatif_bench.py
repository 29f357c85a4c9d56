"""`make bench` (what-if line): what one what-if costs at the 4,000-job, 500-node shape
(issue 37's goal: under 2 s), `scheduler.whatif.what_if` as the portal calls it (6 hours ahead).

500 nodes of 8 GPUs and 20 projects with equal quotas; 2,000 jobs of 1, 2 or 4 GPUs fill the
cluster (predicted run times 10 min to 6 h) and 2,000 of 1 to 8 GPUs wait. The snapshot is
settled first (the state the portal's cycles leave), then each change is timed: a node drained,
a project's quota tripled (its reclaim searches are the costly part), a node cordoned. The
first change runs the state's "before" forward run, the others reuse it (scheduler/whatif.py
keeps it), as an admin trying changes one after another does. Prints one line per change (wall
and CPU seconds: on a loaded machine the wall time is mostly waiting) and a JSON line at the end.
"""

from __future__ import annotations

import json
import random
import time

from scheduler.cycle import settle
from scheduler.model import Job, Node, PodPlacement, Project, Snapshot
from scheduler.whatif import NodeChange, ProjectChange, what_if

NODES, JOBS, PROJECTS, HOURS = 500, 4000, 20, 6


def snapshot(nodes: int = NODES, jobs: int = JOBS, projects: int = PROJECTS, seed=1) -> Snapshot:
    rng = random.Random(seed)
    node_list = tuple(Node(f"node-{i:04d}", 8) for i in range(nodes))
    teams = tuple(Project(f"p{i:02d}", nodes * 8 / projects, order=i) for i in range(projects))
    running: list[Job] = []
    slot = 0
    while slot < nodes * 8 and len(running) < jobs // 2:
        size = min(rng.choice((1, 2, 4)), 8 - slot % 8)
        pod = PodPlacement(node_list[slot // 8].name, tuple(range(slot % 8, slot % 8 + size)))
        order = len(running)
        running.append(Job(f"p{order % projects:02d}", f"r{order}", size, order=order,
                           started=0.0, expected_s=rng.uniform(600, 6 * 3600),
                           placement=(pod,)))  # fmt: skip
        slot += size
    waiting = [
        Job(f"p{i % projects:02d}", f"q{i}", rng.choice((1, 1, 2, 4, 8)), order=len(running) + i,
            expected_s=rng.uniform(600, 6 * 3600))
        for i in range(jobs - len(running))
    ]  # fmt: skip
    return Snapshot(nodes=node_list, projects=teams, jobs=tuple(running + waiting), now=100.0)


def main() -> None:
    view, _ = settle(snapshot())
    quota = NODES * 8 / PROJECTS * 3
    changes = {
        "drain node-0003": [NodeChange("node-0003", "drain")],
        f"quota p00={quota:.0f}": [ProjectChange("p00", {"quota": quota})],
        "cordon node-0003": [NodeChange("node-0003", "cordon")],
    }
    results = []
    for index, (name, change) in enumerate(changes.items()):
        started, cpu = time.perf_counter(), time.process_time()
        result = what_if(view, change, horizon_s=HOURS * 3600.0)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        before = "kept" if index else "run"  # the first change runs the state's before
        print(f"what-if {name} at {NODES} nodes, {len(view.jobs)} jobs: {seconds:.2f} s "
              f"({cpu:.2f} s CPU; before {before}; {len(result.after.series)} steps, "
              f"{len(result.stopped)} stopped now)")  # fmt: skip
        results.append({"change": name, "nodes": NODES, "jobs": len(view.jobs),
                        "seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2),
                        "before": before, "stopped": len(result.stopped)})  # fmt: skip
    print(json.dumps(results))


if __name__ == "__main__":
    main()
