"""A weekly reservation replayed on a trace (issue 37, R22): did its project find its GPUs at
the slot's start, and what did holding them cost everyone else?

    python -m scheduler_tools.simulate.booking_study ../shared/traces/philly_50k.csv \\
        --quotas ../shared/traces/philly_vc_quota.csv --vc-scale 0.5 --team 2869ce

The trace has no course labs, so each week's slot brings its own demand, a documented rule:
at every slot start T1 the booking's team submits `gpus / node GPUs` jobs of one whole node,
each running `--fill` of the slot and saying so (its estimate, as a lab's time limit would).
The same trace with those jobs runs twice, in two processes, under the same policy: once with
the weekly booking (R22.2 holds back work predicted to overrun T1, R22.3 reclaims at T1) and
once without it (the slot's jobs queue as over-quota work). Per slot it reports how many of
the slot's jobs started within one cycle of T1 and the GPUs reclaimed for it at T1; over the
run, the other jobs' queueing, the utilisation and the evictions, with and without.

Allot's default policy (`kai`, service bands) with the online run-time predictor feeding
running jobs' predicted ends, as the portal's ETAs do (without predictions no job could be
shown to end before T1, and R22.2 would hold the reserved GPUs idle all week).
"""

from __future__ import annotations

import argparse
import math
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace

from scheduler.model import Reservation
from scheduler.predict import quantile

from .engine import Cluster, SimOptions, Simulation
from .policies import get_policy
from .trace import Trace, TraceJob, read_quotas, read_trace

WEEK_S = 7 * 86400
SLOT_USER = "slot"


@dataclass(frozen=True)
class Booking:
    """The weekly booking: `gpus` for `team` from `first_start` for `hours`, every week."""

    team: str
    gpus: int
    first_start: float
    hours: float
    fill: float

    def starts(self, until: float) -> list[float]:
        """Every slot start up to `until` (the trace's last submission)."""
        return [self.first_start + w * WEEK_S for w in range(int((until - self.first_start)
                                                                  // WEEK_S) + 1)]  # fmt: skip

    def occurrences(self, until: float) -> tuple[Reservation, ...]:
        """One core Reservation per week (the producer expands weekly bookings, R22.1)."""
        return tuple(
            Reservation(f"lab#{i + 1}", self.team, self.gpus, t1, t1 + self.hours * 3600)
            for i, t1 in enumerate(self.starts(until))
        )


def with_slot_jobs(trace: Trace, booking: Booking, node_gpus: int) -> Trace:
    """The trace plus each slot's demand: whole-node jobs of the team submitted at T1, each
    running `fill` of the slot, estimate included (see the module doc)."""
    last = max(job.submit_s for job in trace.jobs)
    run_s = booking.hours * 3600 * booking.fill
    extra = [
        TraceJob(
            index=len(trace.jobs) + n,
            job_id=f"slot-{week + 1}-{i + 1}",
            submit_s=t1,
            duration_s=run_s,
            gpus_per_pod=float(node_gpus),
            pods=1,
            team=booking.team,
            user=SLOT_USER,
            estimate_s=run_s,
            requested_gpus=float(node_gpus),
        )
        for week, t1 in enumerate(booking.starts(last))
        for i in range(booking.gpus // node_gpus)
        for n in [week * 1000 + i]
    ]
    jobs = sorted(trace.jobs + extra, key=lambda j: (j.submit_s, j.index))
    return Trace(jobs, trace.skipped, trace.path)


def run(trace: Trace, cluster: Cluster, booking: Booking, booked: bool, cycle_s: float) -> dict:
    """One run (in its own process): the figures the report needs, as plain data."""
    spec = replace(get_policy("kai"), name="kai+predictor", predict=True)
    last = max(job.submit_s for job in trace.jobs)
    options = SimOptions(
        cycle_s=cycle_s, progress=False,
        reservations=booking.occurrences(last) if booked else (),
        watch=tuple((booking.team, t1) for t1 in booking.starts(last)),
    )  # fmt: skip
    sim = Simulation(trace, cluster, spec, options)
    result = sim.run()
    slot = {j.job_id: j.first_start_s for j in result.jobs if j.job_id.startswith("slot-")}
    others = [j.first_wait_s for j in result.jobs
              if not j.job_id.startswith("slot-") and j.first_wait_s is not None]  # fmt: skip
    return {
        "slot_starts": slot,
        "held_at": {asked: (cycle, gpus) for _, asked, cycle, gpus in sim.watched},
        "reservation_evictions": sim.reservation_evictions,
        "others_wait": others,
        "summary": result.summary,
    }


def report(booking: Booking, starts: list[float], node_gpus: int, cycle_s: float, free: dict,
           held: dict) -> str:  # fmt: skip
    """The per-slot table and the cost table, in Markdown. The team "found its GPUs" at a slot
    when, after the cycle at T1, it held at least the booked GPUs (its own jobs already running
    count: R22.3 serves the project up to the booked GPUs in all)."""
    per_slot = booking.gpus // node_gpus
    lines = [
        "| slot | T1 (day) | team's GPUs after the T1 cycle, booked / not booked | "
        "slot jobs started at T1, booked / not booked | GPUs reclaimed for the booking at T1 "
        "/ later in the slot |",
        "|---|---:|---:|---:|---:|",
    ]
    found = 0
    for week, t1 in enumerate(starts):
        key = f"slot-{week + 1}-"
        gpus = {name: _held(run, t1, cycle_s) for name, run in (("held", held), ("free", free))}
        on_time = {name: _on_time(run["slot_starts"], key, t1, cycle_s)
                   for name, run in (("held", held), ("free", free))}  # fmt: skip
        found += gpus["held"] >= booking.gpus
        at_t1 = sum(g for t, g in held["reservation_evictions"] if t1 <= t < t1 + cycle_s)
        later = sum(g for t, g in held["reservation_evictions"]
                    if t1 + cycle_s <= t < t1 + booking.hours * 3600)  # fmt: skip
        lines.append(
            f"| {week + 1} | {t1 / 86400:.2f} | {gpus['held']:g} / {gpus['free']:g} | "
            f"{on_time['held']} / {on_time['free']} of {per_slot} | {at_t1:g} / {later:g} |"
        )
    lines += [
        "",
        f"The team held its {booking.gpus} booked GPUs one cycle after T1 in {found} of "
        f"{len(starts)} slots.",
        "",
        "| run | others' mean / p50 / p95 queueing (s) | utilisation | evictions | "
        "of them for the booking | lost GPU-h |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, run in (("not booked", free), ("booked", held)):
        wait = sorted(run["others_wait"])
        mean = sum(wait) / len(wait) if wait else 0.0
        s = run["summary"]
        lines.append(
            f"| {name} | {mean:,.0f} / {_q(wait, 0.50):,.0f} / {_q(wait, 0.95):,.0f} | "
            f"{s['utilization']:.3f} | {s['evictions']:,} | "
            f"{len(run['reservation_evictions']):,} | {s['lost_gpu_h']:,.0f} |"
        )
    return "\n".join(lines)


def _held(run: dict, t1: float, cycle_s: float) -> float:
    """The team's GPUs after the first cycle at or after T1, 0 when that cycle came later than
    one cycle period after T1 (not in time)."""
    cycle, gpus = run["held_at"].get(t1, (None, 0.0))
    return gpus if cycle is not None and cycle - t1 <= cycle_s else 0.0


def _q(ordered: list[float], q: float) -> float:
    return quantile(ordered, q) if ordered else 0.0


def _on_time(starts: dict, prefix: str, t1: float, cycle_s: float) -> int:
    """Slot jobs of this week that first started within one cycle of T1."""
    return sum(
        1
        for name, start in starts.items()
        if name.startswith(prefix) and start is not None and start - t1 <= cycle_s
    )


def main(argv: list[str] | None = None) -> int:
    """Run both replays side by side and print the report."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace")
    p.add_argument("--quotas", required=True, help="per-team quota CSV (team,nodes[,gpus])")
    p.add_argument("--vc-scale", type=float, default=1.0)
    p.add_argument("--gpus-per-node", type=int, default=8)
    p.add_argument("--team", required=True, help="the team that books")
    p.add_argument("--share", type=float, default=0.25, help="of the cluster's GPUs (0.25)")
    p.add_argument("--day", type=float, default=2.0, help="first slot's day on the trace clock")
    p.add_argument("--start-h", type=float, default=14.0, help="slot start, hours into the day")
    p.add_argument("--hours", type=float, default=3.0, help="slot length (3)")
    p.add_argument("--fill", type=float, default=0.9, help="slot jobs run this much of it")
    p.add_argument("--cycle-s", type=float, default=60.0)
    p.add_argument("--limit-jobs", type=int)
    args = p.parse_args(argv)
    node_gpus = args.gpus_per_node
    vcs = read_quotas(args.quotas, node_gpus, args.vc_scale)
    nodes = sum(vc.nodes for vc in vcs.values())
    cluster = Cluster(nodes, node_gpus, {t: vc.gpus for t, vc in vcs.items()},
                      {t: vc.nodes for t, vc in vcs.items()})  # fmt: skip
    if args.team not in vcs:
        p.error(f"--team: {args.team!r} is not a team of {args.quotas}")
    gpus = math.floor(cluster.gpus * args.share / node_gpus) * node_gpus
    booking = Booking(args.team, gpus, (args.day * 24 + args.start_h) * 3600, args.hours,
                      args.fill)  # fmt: skip
    trace = with_slot_jobs(read_trace(args.trace, node_gpus, limit=args.limit_jobs), booking,
                           node_gpus)  # fmt: skip
    with ProcessPoolExecutor(2) as pool:
        free_f = pool.submit(run, trace, cluster, booking, False, args.cycle_s)
        held_f = pool.submit(run, trace, cluster, booking, True, args.cycle_s)
        free, held = free_f.result(), held_f.result()
    print(f"{nodes}x{node_gpus} GPUs, {len(trace.jobs):,} jobs; {args.team} books {gpus} GPUs "
          f"weekly for {args.hours:g} h from day {args.day:g} {args.start_h:g}:00")  # fmt: skip
    starts = booking.starts(max(j.submit_s for j in trace.jobs))
    print(report(booking, starts, node_gpus, args.cycle_s, free, held))
    return 0


if __name__ == "__main__":
    sys.exit(main())
