"""`make bench-eta`: what one ETA refresh costs (`scheduler.eta.estimate_starts` as the portal
calls it: 30-day horizon, a minute or 1/50 of the predicted ends' span per step).

Clusters of 8-GPU nodes, full of 1-GPU jobs with predicted run times of 10 min to 2 h, and a
queue of 1/2/4/8-GPU jobs over 10 projects. Prints one line per shape and a JSON line at the end.
"""

from __future__ import annotations

import json
import random
import time

from scheduler.eta import estimate_starts, resolution_for
from scheduler.model import Job, Node, PodPlacement, Policy, Project, Snapshot

SHAPES = ((32, 100), (100, 400), (352, 1000))  # (nodes, pending jobs)
HORIZON_S = 30 * 86400.0
ETA_POLICY = Policy(consolidation=False, reclaim=False, preempt=False)  # as portal.scheduling.eta


def snapshot(nodes: int, pending: int, seed: int = 1) -> Snapshot:
    rng = random.Random(seed)
    node_list = tuple(Node(f"node-{i:04d}", 8) for i in range(nodes))
    projects = tuple(Project(f"p{i}", nodes * 8 / 10, order=i) for i in range(10))
    running = [
        Job(f"p{i % 10}", f"r{i}", 1, order=i, started=0.0, expected_s=rng.uniform(600, 7200),
            placement=(PodPlacement(node_list[i // 8].name, (i % 8,)),))
        for i in range(nodes * 8)
    ]  # fmt: skip
    queue = [
        Job(f"p{i % 10}", f"q{i}", rng.choice((1, 1, 2, 4, 8)), order=nodes * 8 + i,
            expected_s=rng.uniform(600, 7200))
        for i in range(pending)
    ]  # fmt: skip
    return Snapshot(nodes=node_list, projects=projects, jobs=tuple(running + queue), now=100.0)


def main() -> None:
    results = []
    for nodes, pending in SHAPES:
        view = snapshot(nodes, pending)
        step = resolution_for(view, HORIZON_S)
        started = time.perf_counter()
        starts = estimate_starts(view, ETA_POLICY, horizon_s=HORIZON_S, resolution_s=step)
        seconds = time.perf_counter() - started
        known = sum(value is not None for value in starts.values())
        print(f"{nodes} nodes x 8 GPUs, {nodes * 8} running, {pending} pending: {seconds:.2f} s "
              f"({known}/{pending} ETAs, step {step:.0f} s)")  # fmt: skip
        results.append({"nodes": nodes, "running": nodes * 8, "pending": pending, "known": known,
                        "seconds": round(seconds, 2), "step_s": round(step)})  # fmt: skip
    print(json.dumps(results))


if __name__ == "__main__":
    main()
