"""How right the what-if's predicted starts are (issue 37): the simulator replays a trace slice
to a moment t, the what-if (`scheduler.whatif.what_if`, as the portal's preview runs it) predicts
each pending job's start with a change made at t, and the same replay, copied at t, goes on with
the change really made; the error is |predicted - replayed| start, in minutes.

The replay goes on as the cluster would: jobs end at their true run times and the trace's later
jobs arrive. The what-if knows neither: it runs predicted run times and no arrivals. So each
moment is measured three ways, to separate the causes:

- ``what-if`` vs ``replay``: the whole error, what an admin reading the preview sees;
- ``oracle what-if`` (every run time the true one) vs ``replay``: what is left once the run-time
  predictor is exact (arrivals, the forward run's clock steps and its allocate-and-backfill-only
  model of later cycles);
- ``oracle what-if`` vs ``closed replay`` (the copy with no later arrival): the forward run's
  own model error alone;
- ``oracle what-if, 1-min steps`` vs ``closed replay``: the same with the forward run stepping
  the clock a minute at a time (the preview steps about 1/20 of the span of the running jobs'
  ends, up to 18 minutes over 6 hours, to answer within 2 s), which leaves the forward run's
  model of later cycles (allocate and backfill only: no reclaim, preemption or consolidation
  after the first cycle) as the rest.

Each line also gives the signed mean (predicted minus replayed: negative, the what-if is early).

The predictor's share is the first line minus the second. Changes are a quota raise (one team's
quota doubled, at least +8 GPUs) and a node drained (the busiest node), at `--moments` moments
drawn with `--seed` from the middle of the slice. Jobs the what-if cannot place within the
horizon, or that the replay has not started by then, are counted apart, not in the error.

  python -m scheduler_tools.whatif_accuracy /work/shared/traces/philly_busy_2k.csv \\
      --quotas /work/shared/traces/philly_vc_quota.csv --vc-scale 0.25 --seed 7
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import random
import statistics
import sys
from dataclasses import replace

import scheduler.whatif as whatif_core
from scheduler.model import Snapshot
from scheduler.whatif import NodeChange, ProjectChange, what_if

from .simulate.engine import MAX_IDLE_BUSY, Cluster, SimOptions, Simulation
from .simulate.policies import get_policy
from .simulate.trace import read_quotas, read_trace

HORIZON_S = 6 * 3600.0  # the preview's hours


def build(args) -> Simulation:
    """The simulation the arguments describe (trace, quotas, cluster shape, policy)."""
    trace = read_trace(args.trace)
    vcs = read_quotas(args.quotas, 8, args.vc_scale)
    quotas = {team: vc.gpus for team, vc in vcs.items()}
    nodes = sum(vc.nodes for vc in vcs.values())
    cluster = Cluster(nodes, 8, quotas, {t: vc.nodes for t, vc in vcs.items()}, f"{nodes}x8")
    # Allot's default policy, with the online predictor giving every job its run time (the
    # portal's what-if has predictions from the ETA refresh; `kai` alone has none).
    spec = replace(get_policy(args.policy), predict=True)
    return Simulation(trace, cluster, spec, SimOptions(progress=False))


def run_until(sim: Simulation, until: float, busy: bool = False, started=None) -> bool:
    """The engine's main loop (`Simulation.run`) up to the clock `until`; returns `busy`."""
    while sim._now < until:
        busy = sim._step(busy)
        if busy and sim._idle_busy >= MAX_IDLE_BUSY:
            break
        if not sim._advance(busy):
            break
    return busy


def recording(sim: Simulation, since: float) -> dict:
    """Record each job's first start at or after `since` in the returned dict."""
    starts: dict = {}
    original = sim._start

    def start(s, placement, now, backfill):
        """Note each job's first start, then start it as the engine does."""
        starts.setdefault(s.key, now)
        return original(s, placement, now, backfill)

    sim._start = start
    return starts


def snapshot(sim: Simulation, oracle: bool) -> Snapshot:
    """What the portal's what-if reads at this moment: every running job with its predicted end
    (the true one with `oracle`) and every pending job with its predicted run time."""
    now = sim._now
    jobs = []
    for key, job in sim.running.items():
        if oracle:
            s = sim.sims[key]
            job = replace(job, expected_end=s.run_start + s.remaining, expected_s=s.remaining)
        jobs.append(job)
    for key, job in sim.pending.items():
        if oracle:
            job = replace(job, expected_s=sim.sims[key].remaining)
        jobs.append(job)
    return Snapshot(nodes=sim.nodes, projects=sim.projects, jobs=tuple(jobs), now=now)


def make_change(sim: Simulation, kind: str, rng: random.Random):
    """A change and what it does to a replay copy."""
    if kind == "quota":
        waiting = sorted({key[0] for key in sim.pending})
        team = rng.choice(waiting)
        project = next(p for p in sim.projects if p.name == team)
        quota = max(project.quota * 2, project.quota + 8)

        def apply(copy_: Simulation) -> None:
            """The quota change made on a copy of the run."""
            copy_.projects = tuple(
                replace(p, quota=quota) if p.name == team else p for p in copy_.projects
            )

        return (
            ProjectChange(team, {"quota": quota}),
            apply,
            f"{team} quota {project.quota:g}->{quota:g}",
        )
    load: dict[str, int] = {}
    for job in sim.running.values():
        for pod in job.placement:
            load[pod.node] = load.get(pod.node, 0) + len(pod.devices)
    node = max(sorted(load), key=lambda n: load[n])

    def apply(copy_: Simulation) -> None:
        """The drain made on a copy of the run: the node takes no more work."""
        copy_.nodes = tuple(
            replace(n, schedulable=False) if n.name == node else n for n in copy_.nodes
        )
        for key in [
            k for k, j in copy_.running.items() if any(p.node == node for p in j.placement)
        ]:
            copy_._evict(copy_.sims[key], copy_._now)

    return NodeChange(node, "drain"), apply, f"drain {node}"


def replay(sim: Simulation, apply, closed: bool, busy: bool) -> dict:
    """A copy of `sim` with the change made, run to the horizon: each job's replayed start."""
    twin = copy.deepcopy(sim)
    apply(twin)
    if closed:
        twin._next_submit_s = lambda: math.inf
    starts = recording(twin, twin._now)
    run_until(twin, sim._now + HORIZON_S, busy=True)
    return starts


def errors(predicted: dict, replayed: dict, keys) -> tuple[list[float], int, int]:
    """predicted - replayed minutes of the jobs both place within the horizon; and how many
    only the what-if, or only the replay, could not place."""
    out, unplaced_pred, unplaced_replay = [], 0, 0
    for key in keys:
        p, r = predicted.get(key), replayed.get(key)
        if p is None:
            unplaced_pred += 1
        elif r is None:
            unplaced_replay += 1
        else:
            out.append((p - r) / 60.0)
    return out, unplaced_pred, unplaced_replay


def fine_what_if(view: Snapshot, change, policy):
    """The what-if with the forward run's clock stepped a minute at a time."""
    steps, most = whatif_core.STEPS, whatif_core.MAX_STEPS
    whatif_core.STEPS = whatif_core.MAX_STEPS = int(HORIZON_S / 60)
    try:
        return what_if(view, [change], policy, HORIZON_S)
    finally:
        whatif_core.STEPS, whatif_core.MAX_STEPS = steps, most


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of the values, NaN when there are none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv=None) -> None:
    """Run the comparison the arguments ask for and print (or write as JSON) its figures."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--quotas", required=True)
    p.add_argument("--vc-scale", type=float, default=0.25)
    p.add_argument("--policy", default="kai")
    p.add_argument("--moments", type=int, default=6, help="moments t (each: both changes)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true", help="one JSON line of the figures at the end")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    sim = build(args)
    sim._begin_run()
    last = sim.trace.jobs[-1].submit_s
    moments = sorted(rng.uniform(0.3 * last, 0.7 * last) for _ in range(args.moments))
    pairs = {"whole": [], "oracle": [], "closed": [], "fine": []}
    counts = {"pending": 0, "unplaced_whatif": 0, "unplaced_replay": 0}
    busy = False
    for t in moments:
        busy = run_until(sim, t, busy)
        for kind in ("quota", "drain"):
            change, apply, label = make_change(sim, kind, rng)
            keys = list(sim.pending)
            predicted = what_if(snapshot(sim, False), [change], sim.spec.policy, HORIZON_S)
            oracle = what_if(snapshot(sim, True), [change], sim.spec.policy, HORIZON_S)
            fine = fine_what_if(snapshot(sim, True), change, sim.spec.policy)
            opened = replay(sim, apply, closed=False, busy=busy)
            closed = replay(sim, apply, closed=True, busy=busy)
            whole, up, ur = errors(predicted.after.starts, opened, keys)
            pairs["whole"] += whole
            pairs["oracle"] += errors(oracle.after.starts, opened, keys)[0]
            pairs["closed"] += errors(oracle.after.starts, closed, keys)[0]
            pairs["fine"] += errors(fine.after.starts, closed, keys)[0]
            counts["pending"] += len(keys)
            counts["unplaced_whatif"] += up
            counts["unplaced_replay"] += ur
            size = [abs(e) for e in whole]
            print(f"t={t / 3600:7.1f} h  {label:28s} pending {len(keys):4d}  compared "
                  f"{len(whole):4d}  median {quantile(size, 0.5):6.1f} min  p90 "
                  f"{quantile(size, 0.9):6.1f} min", flush=True)  # fmt: skip
    figures = {
        name: {"jobs": len(v), "median_min": round(quantile([abs(e) for e in v], 0.5), 1),
               "p90_min": round(quantile([abs(e) for e in v], 0.9), 1),
               "signed_mean_min": round(statistics.fmean(v), 1) if v else None}
        for name, v in pairs.items()
    }  # fmt: skip
    for name, words in (("whole", "what-if vs replay"), ("oracle", "oracle what-if vs replay"),
                        ("closed", "oracle what-if vs closed replay"),
                        ("fine", "oracle, 1-min steps vs closed")):  # fmt: skip
        f = figures[name]
        print(f"{words:34s} {f['jobs']:5d} jobs  median {f['median_min']:6.1f} min  "
              f"p90 {f['p90_min']:6.1f} min  signed mean {f['signed_mean_min']} min")  # fmt: skip
    print(f"pending at the moments {counts['pending']}, not placed by the what-if within "
          f"{HORIZON_S / 3600:g} h {counts['unplaced_whatif']}, placed by it but not started "
          f"by the replay {counts['unplaced_replay']}")  # fmt: skip
    if args.json:
        print(json.dumps({"figures": figures, **counts, "seed": args.seed}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
