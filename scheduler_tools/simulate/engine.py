"""The event-driven trace simulator: virtual time, the real scheduling core.

**Time.** Three kinds of events move the clock: submissions (at their trace time), completions
(start + remaining run time, exact) and cycle ticks at multiples of ``cycle_s``. Events between
two ticks are applied at their own times (so the metrics are exact), and the scheduler sees
them at the next tick, as a real cluster's scheduler sees them at its next period (R1.1). A
tick runs :func:`scheduler.plan_cycle` — the same function the portal runs — only when it
could decide something: some job is pending and either an event happened since the last cycle
or the last plan was not empty (R1.3: a settled cluster decides nothing until something
changes). With nothing pending no action has anything to do (allocate, consolidation, reclaim
and preempt are all driven by pending jobs; the simulator never leaves a gang degraded, so
R6.4 has nothing to evict). Between such ticks the clock jumps to the tick of the next event.
Policies whose decisions depend on the clock (backfill compares predicted ends with `now`)
also wake at each running job's predicted end; with service bands (L1) a running job's reaching
its next GPU-hour threshold is an event too, and every job carries the GPU-seconds it has held
over all its runs (thrown-away ones included) and the band they put it in.

**Plans.** ``start`` starts a pending job at the tick (``Job.started`` = the tick, and
``backfilled=True`` when the deciding action is ``"backfill"``); ``evict`` returns a job to
pending with its `order` kept (R1.3); ``move`` re-places a running job, which restarts it.
A restarted job runs its whole duration again (``restart="zero"``, the default: no
checkpoints) or only what was left (``restart="checkpoint"``).

**Cost.** Node and project tuples are built once; jobs live in dicts (running; pending, with
a sorted queue per team and job shape) and the snapshot's job tuple is assembled from them per
cycle; a `Job` object is only replaced when its placement or band changes. In an overloaded cluster
the core's cycle grows with the pending queue, so by default the snapshot shows each team's
queue only as deep as could possibly matter this cycle (:meth:`Simulation._bounded`, exact for
the policies without backfill, checked by a test).
"""

from __future__ import annotations

import bisect
import heapq
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from scheduler.bands import band_of
from scheduler.cycle import plan_cycle
from scheduler.model import Job, JobKey, Project, Reservation, Snapshot, to_milli
from scheduler.predict import BURST_GAP_S, Bursts, Predictor, Running
from scheduler.queues import build_queues, compute_fair_shares
from scheduler.usage import DEFAULT_WINDOW_S, UsageParams

from .metrics import ClusterTracker, JobOutcome, RunResult, TeamTracker, summarize
from .policies import PolicySpec
from .trace import Trace, TraceJob, build_nodes
from .usage import UsageTracker
from .users import UserShares, user_limits, user_rows, user_summary

BACKLOG = "~backlog~"  # the depth bound's placeholder job (never placed, never decided)
BACKLOG_ORDER = 1 << 62
MAX_IDLE_BUSY = 10_000
WAKE_AFTER_S = 1e-3  # a plan that never settles without new events is a core bug


@dataclass(frozen=True)
class Cluster:
    """The simulated cluster: `nodes` x `node_gpus`, per-team quotas in GPUs and, for the
    partitioned policies, the nodes behind each quota."""

    nodes: int
    node_gpus: int
    quotas: dict[str, float]
    quota_nodes: dict[str, int]
    label: str = ""

    @property
    def gpus(self) -> int:
        """Total GPUs."""
        return self.nodes * self.node_gpus


@dataclass(frozen=True)
class SimOptions:
    """Knobs of a run: cycle period, what an eviction costs, predictor settings, progress."""

    cycle_s: float = 60.0
    restart: str = "zero"
    progress: bool = True
    quantile: float = 0.5
    min_samples: int = 3
    depth_bound: bool = True
    backfill_depth: int = 50
    censoring: bool = True
    outlook_s: float = 600.0
    bursts: bool = True
    burst_gap_s: float = BURST_GAP_S
    # Time-based fair share (R2.9, E10): each team's usage over a sliding window, decayed with
    # this half-life, lowers its over-quota weight; 0 (the default, as in the portal): off.
    fairshare_half_life_s: float = 0.0
    fairshare_window_s: float = DEFAULT_WINDOW_S
    # Per-user limits inside every team (R21.1, R21.2, issue 36): the default of each project's
    # users; None: no limit (the default, as in the portal).
    user_max_gpus: float | None = None
    user_max_running: int | None = None
    # Fair share between the users of each team (issue 36, R21.4-R21.8): every team's project
    # divides its share among its active users (the trace's `user` column). The depth bound's
    # backlog placeholder would count as a user of its own, so with it every pending job is
    # shown (the bound is off).
    user_fair_share: bool = False
    # Racks (issue 38): nodes grouped in racks of this many, in name order, by the label
    # RACK_LABEL, the pools' one topology level; 0: no racks. With `preferred_rack` every job of
    # several pods asks for `{"preferred": "rack"}` (R23.3). The run counts how many jobs that
    # first start on several nodes start inside one rack, with or without the preference.
    rack_nodes: int = 0
    preferred_rack: bool = False
    # Reservations (issue 37, R22): booked occurrences on the trace's clock, each handed to
    # every cycle until its end, as the portal hands them; a cycle runs at each slot's start
    # and end. Evictions made for them (decision action "reservation") are counted apart.
    reservations: tuple[Reservation, ...] = ()
    # (team, time) pairs: after the first cycle at or after each time, the team's GPUs are
    # recorded in `Simulation.watched` (the booking study reads a team's GPUs at each T1).
    watch: tuple[tuple[str, float], ...] = ()


RACK_LABEL = "sim.allot.io/rack"


class _Sim:
    """One job's simulation state."""

    __slots__ = (
        "burst",
        "epoch",
        "key",
        "milli",
        "outcome",
        "pending_since",
        "remaining",
        "requested",
        "run_start",
        "trace",
    )

    def __init__(self, trace: TraceJob, key: JobKey, milli: int, outcome: JobOutcome):
        self.trace = trace
        self.key = key
        self.milli = milli
        self.requested = to_milli(trace.requested_gpus or trace.gpus_per_pod) * trace.pods
        self.outcome = outcome
        self.remaining = trace.duration_s
        self.run_start: float | None = None
        self.pending_since = trace.submit_s
        self.epoch = 0
        self.burst = ""  # the job's burst, for the predictor


class Simulation:
    """Replays one trace under one policy; :meth:`run` returns the :class:`RunResult`."""

    def __init__(
        self,
        trace: Trace,
        cluster: Cluster,
        spec: PolicySpec,
        options: SimOptions | None = None,
        progress: Callable[[str], None] | None = None,
    ):
        self.trace = trace
        self.cluster = cluster
        self.spec = spec
        self.options = options or SimOptions()
        if self.options.restart not in ("zero", "checkpoint"):
            raise ValueError("restart must be 'zero' or 'checkpoint'")
        self._write_progress = progress or _stderr
        teams = list(cluster.quotas) + [t for t in trace.teams if t not in cluster.quotas]
        self.nodes = build_nodes(cluster.nodes, cluster.node_gpus, self._pools(teams))
        self.rack_of: dict[str, str] = {}
        self.topology: dict[str, tuple[str, ...]] = {}
        if self.options.rack_nodes:
            size = self.options.rack_nodes
            self.rack_of = {n.name: f"rack-{i // size:04d}" for i, n in enumerate(self.nodes)}
            self.nodes = tuple(replace(n, labels=((RACK_LABEL, self.rack_of[n.name]),))
                               for n in self.nodes)  # fmt: skip
            self.topology = dict.fromkeys({n.pool for n in self.nodes}, (RACK_LABEL,))
        self.multi_node = [0, 0]  # jobs first started on several nodes, of them inside one rack
        # (time, GPUs) of each eviction made for a reservation (R22.3, R22.5)
        self.reservation_evictions: list[tuple[float, float]] = []
        self._bookings = tuple(sorted(self.options.reservations, key=lambda r: r.end))
        self._watch = sorted(self.options.watch, key=lambda w: w[1])
        self.watched: list[tuple[str, float, float, float]] = []  # team, asked, cycle, GPUs
        self.user_limits = user_limits(self.options.user_max_gpus, self.options.user_max_running)
        self.projects = tuple(self._project(team, i) for i, team in enumerate(teams))
        # the heaviest user's share while a teammate waits, when the trace has users (issue 36)
        self.shares = UserShares(trace) if any(job.user for job in trace.jobs) else None
        self.limits = {
            p.name: to_milli(p.limit) if p.limit is not None else None for p in self.projects
        }
        self.predictor = (
            Predictor(quantile=self.options.quantile, min_samples=self.options.min_samples)
            if spec.predict and not spec.oracle_runtime
            else None
        )
        # Bursts and predictions refreshed while jobs wait go with the censoring predictor.
        self.bursts = (
            Bursts(self.options.burst_gap_s)
            if self.predictor is not None and self.options.censoring and self.options.bursts
            else None
        )
        last_submit = max((job.submit_s for job in trace.jobs), default=0.0)
        self.tracker = ClusterTracker(to_milli(cluster.gpus), last_submit)
        self.teams = {
            team: TeamTracker(team, to_milli(cluster.quotas.get(team, 0.0))) for team in teams
        }
        self.running: dict[JobKey, Job] = {}
        self.pending: dict[JobKey, Job] = {}
        # Per team and job shape (GPUs per pod, pods): pending (order, key), sorted.
        self.queues: dict[str, dict[tuple[int, int], list[tuple[int, JobKey]]]] = {
            team: {} for team in teams
        }
        self.pending_count = 0
        self.hidden_jobs = 0  # pending jobs left out of snapshots by the depth bound, summed
        self.bounded = self.options.depth_bound and not self.options.user_fair_share
        # Backfill may pick a later job of a shape over an earlier one (B2), so the bound is
        # not exact there: each team and shape also shows its first `backfill_depth` jobs.
        self.min_depth = self.options.backfill_depth if spec.policy.backfill else 0
        self.sims: dict[JobKey, _Sim] = {}
        self.bands = tuple(spec.policy.service_bands)  # L1 thresholds, GPU-hours
        self.cycles = 0
        self.core_s = 0.0
        params = UsageParams(self.options.fairshare_half_life_s, self.options.fairshare_window_s)
        self.usage = UsageTracker(params, cluster.gpus) if params.on else None
        self._usage: dict[str, float] = {}  # this cycle's normalised usage per team

    # ------------------------------------------------------------------------------ set-up
    def _pools(self, teams: list[str]) -> list[tuple[str, int]] | None:
        """Node pools for a partitioned policy: each team's quota nodes (R5 node pools)."""
        if not self.spec.partition:
            return None
        pools = []
        for team in teams:
            gpus = self.cluster.quotas.get(team, 0.0)
            nodes = gpus / self.cluster.node_gpus
            if nodes != int(nodes):
                raise ValueError(
                    f"{self.spec.name} needs whole-node quotas; {team} has {gpus:g} GPUs"
                )
            pools.append((team, int(nodes)))
        return pools

    def _project(self, team: str, order: int) -> Project:
        quota = self.cluster.quotas.get(team, 0.0)
        return Project(
            team,
            quota,
            limit=quota if self.spec.quota_as_limit else None,
            node_pools=(team,) if self.spec.partition else (),
            order=order,
            user_limits=self.user_limits,
            user_fair_share=self.options.user_fair_share,  # R21.4
        )

    def _orders(self) -> list[int]:
        """Job.order per trace position: submission order, or the duration rank (SJF)."""
        jobs = self.trace.jobs
        if not self.spec.oracle_order:
            return list(range(len(jobs)))
        ranked = sorted(range(len(jobs)), key=lambda i: (jobs[i].duration_s, i))
        orders = [0] * len(jobs)
        for rank, position in enumerate(ranked):
            orders[position] = rank
        return orders

    # ------------------------------------------------------------------------------ events
    def _submit(self, trace_job: TraceJob, order: int) -> None:
        """A trace job arrives: it joins its burst, gets its prediction and waits."""
        t = trace_job.submit_s
        outcome = JobOutcome(
            trace_job.job_id,
            trace_job.team,
            trace_job.gpus,
            trace_job.pods,
            trace_job.submit_s,
            trace_job.duration_s,
        )
        burst = self._join_burst(trace_job)
        self._predict_at_submit(trace_job, burst, outcome)
        job = Job(
            trace_job.team,
            trace_job.job_id,
            trace_job.gpus_per_pod,
            pods=trace_job.pods,
            order=order,
            user=trace_job.user,
            image=trace_job.image,
            expected_s=outcome.predicted_s,
            topology_preferred="rack"
            if self.options.preferred_rack and trace_job.pods > 1
            else None,
        )
        sim = _Sim(trace_job, (trace_job.team, trace_job.job_id), job.milli_total, outcome)
        sim.burst = burst
        self.sims[sim.key] = sim
        self._enqueue(job)
        self._count_submitted(sim, t)

    def _join_burst(self, trace_job: TraceJob) -> str:
        """The burst the job joins (its predictor group), or "" without bursts."""
        if self.bursts is None:
            return ""
        return self.bursts.assign(
            trace_job.user, trace_job.team, trace_job.image, trace_job.gpus, trace_job.submit_s,
            trace_job.job_id,
        )  # fmt: skip

    def _predict_at_submit(self, trace_job: TraceJob, burst: str, outcome: JobOutcome) -> None:
        """The job's predicted run time at submission, kept in its outcome: the predictor's,
        the true one for an oracle policy (a bound), or none."""
        if self.predictor is not None:
            if self.options.censoring:
                self._outlook(trace_job.submit_s)
            guess = self.predictor.predict(
                trace_job.user,
                trace_job.team,
                trace_job.image,
                trace_job.gpus,
                trace_job.estimate_s,
                burst,
            )
            outcome.predicted_s, outcome.basis = guess.seconds, guess.basis
        elif self.spec.oracle_runtime:  # a bound: every run time known exactly
            outcome.predicted_s = trace_job.duration_s
            outcome.basis = "oracle"

    def _count_submitted(self, sim: _Sim, t: float) -> None:
        self.tracker.change(t, pending=+1)
        team = self.teams[sim.key[0]]
        team.change(t, demand=+sim.milli)
        team.add_pending(sim.milli)
        if self.shares is not None:
            self.shares.waits(sim.key[0], sim.trace.user, t, +1)

    def _complete(self, sim: _Sim, t: float) -> None:
        del self.running[sim.key]
        sim.run_start = None
        sim.outcome.end_s = t
        self.tracker.change(t, alloc=-sim.milli, requested=-sim.requested)
        self.teams[sim.key[0]].change(t, alloc=-sim.milli, demand=-sim.milli)
        self._used(sim, t, -1)
        if self.shares is not None:
            self.shares.holds(sim.key[0], sim.trace.user, t, -sim.milli)
        if self.predictor is not None:
            trace_job = sim.trace
            self.predictor.learn(
                trace_job.user, trace_job.team, trace_job.image, trace_job.gpus,
                trace_job.duration_s, sim.burst,
            )  # fmt: skip

    def _start(self, sim: _Sim, placement, now: float, backfill: bool) -> Job:
        job = self._dequeue(sim.key)
        outcome = sim.outcome
        outcome.queued_s += now - sim.pending_since
        if outcome.first_start_s is None:
            outcome.first_start_s = now
            self._count_racks(placement)
        outcome.backfilled += backfill
        sim.run_start = now
        job = replace(
            job,
            placement=placement,
            started=now,
            expected_end=None,
            backfilled=backfill,
            expected_s=self._expected(sim),
        )
        self.running[sim.key] = job
        self.tracker.change(now, alloc=+sim.milli, pending=-1, requested=+sim.requested)
        team = self.teams[sim.key[0]]
        team.change(now, alloc=+sim.milli)
        team.remove_pending(sim.milli)
        self._used(sim, now, +1)
        if self.shares is not None:
            self.shares.waits(sim.key[0], sim.trace.user, now, -1)
            self.shares.holds(sim.key[0], sim.trace.user, now, +sim.milli)
        self._schedule_end(sim, job, now)
        return job

    def _count_racks(self, placement) -> None:
        """A first start on several nodes counts; inside one rack it counts as packed."""
        nodes = {pod.node for pod in placement}
        if self.rack_of and len(nodes) > 1:
            self.multi_node[0] += 1
            self.multi_node[1] += len({self.rack_of[node] for node in nodes}) == 1

    def _expected(self, sim: _Sim) -> float | None:
        """Predicted run time left from this start: the prediction minus the work a checkpoint
        kept (never below zero)."""
        predicted = sim.outcome.predicted_s
        if predicted is None:
            return None
        done = sim.trace.duration_s - sim.remaining
        return max(predicted - done, 0.0)

    def _stop_run(self, sim: _Sim, now: float) -> None:
        """Account the run cut short at `now`: lost entirely, or kept by a checkpoint."""
        ran = now - (sim.run_start if sim.run_start is not None else now)
        if self.options.restart == "checkpoint":
            sim.remaining = max(sim.remaining - ran, 0.0)
        else:  # the run's work is lost; the job starts over
            sim.outcome.lost_s += ran
            sim.remaining = sim.trace.duration_s
        sim.epoch += 1

    def _evict(self, sim: _Sim, now: float) -> None:
        job = self.running.pop(sim.key)
        self._stop_run(sim, now)
        sim.run_start = None
        sim.pending_since = now
        sim.outcome.evictions += 1
        self._enqueue(
            replace(
                self._served(job, sim, now) if self.bands else job,
                placement=(),
                started=None,
                expected_end=None,
                backfilled=False,
            )
        )
        self.tracker.change(now, alloc=-sim.milli, pending=+1, requested=-sim.requested)
        team = self.teams[sim.key[0]]
        team.change(now, alloc=-sim.milli)
        team.add_pending(sim.milli)
        self._used(sim, now, -1)
        if self.shares is not None:
            self.shares.holds(sim.key[0], sim.trace.user, now, -sim.milli)
            self.shares.waits(sim.key[0], sim.trace.user, now, +1)

    def _move(self, sim: _Sim, placement, now: float) -> None:
        self._stop_run(sim, now)
        sim.outcome.moves += 1
        sim.run_start = now
        job = replace(
            self.running[sim.key],
            placement=placement,
            started=now,
            expected_end=None,
            backfilled=False,
            expected_s=self._expected(sim),
        )
        self.running[sim.key] = job
        self._schedule_end(sim, job, now)

    def _used(self, sim: _Sim, t: float, sign: int) -> None:
        """With time-based fair share: the team's allocation changes at `t` (R2.9, E10)."""
        if self.usage is not None:
            self.usage.change(sim.key[0], t, sign * sim.milli / 1000)

    def _enqueue(self, job: Job) -> None:
        """A job becomes pending (submitted, or evicted: it keeps its order, R1.3)."""
        self.pending[job.key] = job
        shape = self._shape(job)
        bisect.insort(self.queues[job.project].setdefault(shape, []), (self._rank(job), job.key))
        self.pending_count += 1

    def _dequeue(self, key: JobKey) -> Job:
        """A pending job starts: out of the pending set and its shape queue."""
        job = self.pending.pop(key)
        queue = self.queues[job.project][self._shape(job)]
        del queue[bisect.bisect_left(queue, (self._rank(job), key))]
        self.pending_count -= 1
        return job

    def _shape(self, job: Job) -> tuple:
        """A pending job's queue within its team: its shape (GPUs per pod, pods), and with
        per-user limits its user too: the depth bound's "a later job of the same shape cannot
        start either" then holds per user (a job held by its user's limit, R21, says nothing
        of a teammate's job of that shape)."""
        if self.user_limits:
            return (job.milli_per_pod, job.pods, job.user)
        return (job.milli_per_pod, job.pods)

    def _rank(self, job: Job) -> tuple[int, int]:
        """A pending job's place in its shape queue: the core's R4.3 order (every job here has
        the same priority class), so its service band first (L2; set by :meth:`_served`, always
        0 without bands)."""
        return (job.band, job.order)

    # ------------------------------------------------------------------------------ service
    def _attained(self, sim: _Sim, now: float) -> float:
        """GPU-seconds the job has held over all its runs up to `now` (L1): the work done or
        kept, the work thrown away by restarts, and the current run."""
        held = sim.trace.duration_s - sim.remaining + sim.outcome.lost_s
        if sim.run_start is not None:
            held += now - sim.run_start
        return held * sim.milli / 1000

    def _served(self, job: Job, sim: _Sim, now: float) -> Job:
        """The job carrying its attained service at `now` and the band the core will derive
        from it (L1): a job whose band is already right is not copied again every cycle."""
        served = replace(job, attained_gpu_s=self._attained(sim, now))
        return replace(served, band=band_of(served, self.bands))

    def _schedule_band(self, sim: _Sim, now: float) -> None:
        """With service bands: wake when the running job reaches its next threshold (L1)."""
        attained = self._attained(sim, now)
        for hours in self.bands:
            if hours * 3600 > attained:
                at = now + (hours * 3600 - attained) * 1000 / max(sim.milli, 1)
                heapq.heappush(self._bands, (at, self._seq(), sim.key, sim.epoch))
                return

    def _cross_bands(self, now: float) -> bool:
        """Running jobs that reached a threshold carry their new attained service, so the core
        puts them in the next band (L1); True when any did. Between thresholds a running job's
        `attained_gpu_s` is left as it was: its band, all the core reads it for, is the same."""
        changed = False
        while self._bands and self._bands[0][0] <= now:
            _, _, key, epoch = heapq.heappop(self._bands)
            sim = self.sims[key]
            job = self.running.get(key)
            if job is None or sim.epoch != epoch or sim.run_start is None:
                continue
            self.running[key] = self._served(job, sim, now)
            self._schedule_band(sim, now)
            changed = True
        return changed

    def _schedule_end(self, sim: _Sim, job: Job, now: float) -> None:
        if self.bands:
            self._schedule_band(sim, now)
        heapq.heappush(self._ends, (now + sim.remaining, self._seq(), sim.key, sim.epoch))
        if self.spec.predict and job.expected_s is not None and job.expected_s > 0:
            wake = now + job.expected_s + WAKE_AFTER_S  # strictly after: B4 wants now > end
            heapq.heappush(self._wakes, (wake, self._seq(), sim.key, sim.epoch))

    def _seq(self) -> int:
        self._counter += 1
        return self._counter

    # ------------------------------------------------------------------------------ cycles
    def _shown_jobs(self) -> tuple[tuple[Job, ...], dict[str, list[JobKey]]]:
        """The snapshot's jobs: every running job and the pending jobs the policy shows.

        Strict FIFO shows each team's queue head that fits in its free quota (R3.1). The
        other policies see every pending job, or — with the depth bound — a prefix of each
        team's queue per job shape that is provably enough (:meth:`_bounded`)."""
        jobs = list(self.running.values())
        heads: dict[str, list[JobKey]] = {}
        if self.spec.strict_fifo:
            for team, shapes in self.queues.items():
                limit = self.limits.get(team)
                free = None if limit is None else limit - self.teams[team].alloc
                shown: list[JobKey] = []
                for _, key in heapq.merge(*shapes.values()):
                    job = self.pending[key]
                    if free is not None:
                        if job.milli_total > limit:
                            continue  # larger than the quota: never starts, blocks nobody
                        if job.milli_total > free:
                            break
                        free -= job.milli_total
                    jobs.append(job)
                    shown.append(key)
                if shown:
                    heads[team] = shown
        elif self.bounded:
            jobs.extend(self._bounded())
        else:
            jobs.extend(self.pending.values())
        return tuple(jobs), heads

    def _bounded(self) -> list[Job]:
        """Pending jobs to show when queues are deep (the depth bound, exact by construction).

        In one cycle a team can gain at most the GPUs idle at the start (allocate and
        consolidation only use those, R4.4, R11.1) plus its fair share (reclaim stops at
        allocated + job <= fair share, R9.2): B = idle + F. So if a team's first jobs of one
        shape already add up to more than B, not all of them start, and a later job of that
        shape cannot either (allocate only fills the cluster further; reclaim skips a job no
        easier than one that failed, R9.6). Those later jobs are left out, and one placeholder
        job per team carries their GPUs so every request, hence every fair share, stays what
        it is with all jobs shown (R2.4). The placeholder can never be placed (one pod larger
        than any node, R5.3) nor reclaim (allocated + it > fair share, R9.2).

        With backfill the bound is an approximation: B2 may start a later job of a shape whose
        earlier jobs are held, because its predicted run is shorter. There every team and shape
        also shows at least its first `backfill_depth` jobs (default 50), a backfill window
        like Slurm's ``bf_max_job_test``; ``--no-depth-bound`` shows everything."""
        total = self.tracker.capacity
        idle = total - self.tracker.alloc
        fair = self._fair_shares()
        shown: list[Job] = []
        largest = self.cluster.node_gpus * 1000
        for team, shapes in self.queues.items():
            tracker = self.teams[team]
            waiting = tracker.demand - tracker.alloc
            if not waiting:
                continue
            bound = idle + fair[team] + self._reserved_now(team)
            mine: list[Job] = []
            shown_milli = 0
            for queue in shapes.values():
                cumulative = 0
                for count, (_, key) in enumerate(queue, 1):
                    job = self.pending[key]
                    mine.append(job)
                    cumulative += job.milli_total
                    if cumulative > bound and count >= self.min_depth:
                        break
                shown_milli += cumulative
            hidden = waiting - shown_milli
            if hidden > max(fair[team], largest):
                shown.extend(mine)
                shown.append(Job(team, BACKLOG, hidden / 1000, order=BACKLOG_ORDER))
                self.hidden_jobs += tracker_pending_jobs(shapes) - len(mine)
            else:
                for queue in shapes.values():
                    shown.extend(self.pending[key] for _, key in queue)
        return shown

    def _reserved_now(self, team: str) -> int:
        """Thousandths of GPUs the team's reservations in their slot now may take back beyond
        idle GPUs and its fair share (R22.3): the depth bound must show that many more."""
        return sum(
            r.gpus * 1000 for r in self._bookings if r.project == team and r.active(self._now)
        )

    def _fair_shares(self) -> dict[str, int]:
        """Every team's fair share (thousandths) as the core will compute it from the full
        requests (R2.4-R2.10), using the core's own division."""
        queues = build_queues(Snapshot(nodes=(), projects=self.projects))
        demand = [
            Job(team, BACKLOG, tracker.demand / 1000)
            for team, tracker in self.teams.items()
            if tracker.demand
        ]
        compute_fair_shares(
            queues, demand, self.tracker.capacity, self._usage, self.spec.policy.k_value
        )
        return {name: queue.fair_share for name, queue in queues.items()}

    @staticmethod
    def _enforce_fifo(decisions, heads: dict[str, list[JobKey]]):
        """Drop starts that would jump a team's earlier shown job that did not start (strict
        head-of-line blocking); FIFO policies make no evictions, so dropping a start is safe."""
        started = {d.job for d in decisions if d.kind == "start"}
        allowed: set[JobKey] = set()
        for shown in heads.values():
            for key in shown:
                if key not in started:
                    break
                allowed.add(key)
        return [d for d in decisions if d.kind != "start" or d.job in allowed]

    def _outlook(self, now: float) -> None:
        """Tell the predictor which jobs run now and for how long (its Kaplan-Meier censoring),
        and give each running job its outlook `expected_end` (B1); with bursts, predict every
        pending job again, as the portal's ETA refresh does (a burst's first finished job
        predicts the rest). Before a submission is predicted and before a cycle, at most every
        `outlook_s` virtual seconds, as each costs a pass over the running or pending jobs."""
        if now < self._next_outlook:
            return
        self._next_outlook = now + self.options.outlook_s
        predictor = self.predictor
        ran: dict[JobKey, Running] = {}
        for key in self.running:
            sim = self.sims[key]
            t = sim.trace
            # Work kept by checkpoints plus this run: what the job is known to need at least.
            this_run = now - sim.run_start if sim.run_start is not None else 0.0
            ran[key] = Running(
                t.user, t.team, t.image, t.gpus, t.duration_s - sim.remaining + this_run,
                sim.burst,
            )  # fmt: skip
        predictor.running(ran.values())
        for key, job in self.running.items():
            r = ran[key]
            sim = self.sims[key]
            end = predictor.expected_end(
                r.user, r.project, r.image, r.gpus, r.ran_s, now, sim.trace.estimate_s, r.burst
            )
            if end != job.expected_end:
                self.running[key] = replace(job, expected_end=end)
        if self.bursts is None:
            return
        for key, job in self.pending.items():
            sim = self.sims[key]
            t = sim.trace
            guess = predictor.predict(t.user, t.team, t.image, t.gpus, t.estimate_s, sim.burst)
            if guess.seconds != sim.outcome.predicted_s:
                sim.outcome.predicted_s, sim.outcome.basis = guess.seconds, guess.basis
                self.pending[key] = replace(job, expected_s=self._expected(sim))

    def _cycle(self, now: float) -> bool:
        """Run one scheduling cycle at `now` and carry its plan out; True when it decided."""
        if self.predictor is not None and self.options.censoring:
            self._outlook(now)
        if self.usage is not None:
            self._usage = self.usage.normalised(now)
        jobs, heads = self._shown_jobs()
        snapshot = Snapshot(
            nodes=self.nodes, projects=self.projects, jobs=jobs, now=now, usage=self._usage,
            topology=self.topology,
            reservations=tuple(r for r in self._bookings if r.end > now),
        )  # fmt: skip
        began = time.perf_counter()
        plan = plan_cycle(snapshot, self.spec.policy)
        self.core_s += time.perf_counter() - began
        self.cycles += 1
        decisions = list(plan.decisions)
        if self.spec.strict_fifo:
            decisions = self._enforce_fifo(decisions, heads)
        for decision in decisions:
            if decision.job[1] == BACKLOG:
                raise RuntimeError(f"the core decided on the depth-bound placeholder: {decision}")
            sim = self.sims[decision.job]
            if decision.kind == "start":
                self._start(sim, decision.placement, now, decision.action == "backfill")
            elif decision.kind == "evict":
                if decision.action == "reservation":
                    self.reservation_evictions.append((now, sim.trace.gpus))
                self._evict(sim, now)
            elif decision.kind == "move":
                self._move(sim, decision.placement, now)
        for team in self.teams.values():
            team.after_cycle(now)
        while self._watch and self._watch[0][1] <= now:
            team, asked = self._watch.pop(0)
            self.watched.append((team, asked, now, self.teams[team].alloc / 1000))
        return bool(decisions)

    # ------------------------------------------------------------------------------ main loop
    def run(self) -> RunResult:
        """Replay the whole trace; returns when every job finished or nothing can change."""
        wall = time.perf_counter()
        self._begin_run()
        busy = False  # the last plan decided something
        while True:
            busy = self._step(busy)
            if busy and self._idle_busy >= MAX_IDLE_BUSY:
                self._give_up()
                break
            self._show_progress(wall)
            if not self._advance(busy):
                break
        if self.options.progress:
            self._progress(time.perf_counter() - wall)
            self._write_progress("\n")
        return self._result(wall)

    def _begin_run(self) -> None:
        """The clock at 0, no event scheduled, no job submitted yet."""
        self._ends: list[tuple[float, int, JobKey, int]] = []
        self._wakes: list[tuple[float, int, JobKey, int]] = []
        self._bands: list[tuple[float, int, JobKey, int]] = []
        self._counter = 0
        self._next_outlook = -math.inf
        self._order_of = self._orders()  # Job.order per trace position
        self._next_sub = 0  # trace position of the next submission
        self._now = 0.0
        self._boundary_seen = -math.inf
        self._tick = 0
        self._last_report = 0.0
        self._finished = 0
        self._idle_busy = 0  # consecutive deciding cycles with no event in between
        self.note = ""

    def _step(self, busy: bool) -> bool:
        """Apply the events due at this tick, then run a cycle if it could decide something: a
        job is pending and an event happened or the last plan decided (R1.3). True when the
        cycle decided."""
        changed = self._apply_due_events()
        if not (self.pending_count and (changed or busy)):
            return False
        self._idle_busy = 0 if changed else self._idle_busy + 1
        return self._cycle(self._now)

    def _apply_due_events(self) -> bool:
        """Every event up to and including this tick; True when any changed what the core sees."""
        changed = self._submit_and_complete()
        if self._bands:
            changed |= self._cross_bands(self._now)
        woke = self._wake_up()
        crossed = self._crossed_boundary()
        return changed or woke or crossed

    def _submit_and_complete(self) -> bool:
        """Submissions and completions up to now in time order (completions first on ties: the
        GPUs are free when the new job is considered); True when any happened."""
        jobs = self.trace.jobs
        changed = False
        while True:
            end_t = self._ends[0][0] if self._ends else math.inf
            sub_t = self._next_submit_s()
            if min(end_t, sub_t) > self._now:
                return changed
            if end_t <= sub_t:
                changed |= self._end_run(end_t)
            else:
                self._submit(jobs[self._next_sub], self._order_of[self._next_sub])
                self._next_sub += 1
                changed = True

    def _next_submit_s(self) -> float:
        jobs = self.trace.jobs
        return jobs[self._next_sub].submit_s if self._next_sub < len(jobs) else math.inf

    def _end_run(self, end_t: float) -> bool:
        """The earliest scheduled end: the job completes unless that run was cut short (evicted
        or moved since); True when it completed."""
        _, _, key, epoch = heapq.heappop(self._ends)
        sim = self.sims[key]
        if sim.epoch != epoch or sim.run_start is None:
            return False
        self._complete(sim, end_t)
        self._finished += 1
        return True

    def _wake_up(self) -> bool:
        """Predicted ends reached by now (B1, B4); True when one belongs to a run still going."""
        woke = False
        while self._wakes and self._wakes[0][0] <= self._now:
            _, _, key, epoch = heapq.heappop(self._wakes)
            sim = self.sims[key]
            woke |= sim.epoch == epoch and sim.run_start is not None
        return woke

    def _crossed_boundary(self) -> bool:
        """Whether a slot started or ended since the last tick (then the cycle runs, R22.3)."""
        if not self._bookings:
            return False
        before, self._boundary_seen = self._boundary_seen, self._now
        return any(before < t <= self._now for r in self._bookings for t in (r.start, r.end))

    def _next_boundary(self) -> float:
        """The next reservation slot's start or end after now (R22.2-R22.3), inf when none."""
        return min(
            (t for r in self._bookings for t in (r.start, r.end) if t > self._now),
            default=math.inf,
        )

    def _give_up(self) -> None:
        """Cycles keep deciding with no event between: a core bug, noted in the summary."""
        self.note = f"stopped: {self._idle_busy} cycles kept deciding with no event between"
        self._write_progress(f"\n{self.note}\n")

    def _advance(self, busy: bool) -> bool:
        """Move the clock to the next tick after a deciding cycle, else to the tick of the next
        event; False when no event is left."""
        cycle_s = self.options.cycle_s
        if busy:
            self._tick += 1
        else:
            upcoming = min(
                self._ends[0][0] if self._ends else math.inf,
                self._next_submit_s(),
                self._wakes[0][0] if self._wakes else math.inf,
                self._bands[0][0] if self._bands else math.inf,
                self._next_boundary(),
            )
            if upcoming == math.inf:
                return False
            self._tick = max(self._tick + 1, math.ceil(upcoming / cycle_s))
        self._now = self._tick * cycle_s
        return True

    def _show_progress(self, wall: float) -> None:
        """The progress line, rewritten at most every half second of wall time."""
        if not self.options.progress:
            return
        clock = time.perf_counter()
        if clock - self._last_report >= 0.5:
            self._last_report = clock
            self._progress(clock - wall)

    def _progress(self, wall_s: float) -> None:
        jobs = self.trace.jobs
        days = jobs[-1].submit_s / 86400 if jobs else 0.0
        self._write_progress(
            f"\r[{self.spec.name}] day {self._now / 86400:6.2f}/{days:.2f}  jobs done "
            f"{self._finished}/{len(jobs)}  cycles {self.cycles}  wall {wall_s:6.1f} s "
        )

    # ------------------------------------------------------------------------------ result
    def _result(self, wall: float) -> RunResult:
        """The run's outcomes in trace order, its summary and per-team rows, the allocation
        series."""
        outcomes = [self.sims[(job.team, job.job_id)].outcome for job in self.trace.jobs]
        now = self._now
        end_time = max((o.end_s for o in outcomes if o.end_s is not None), default=now)
        summary, team_rows = summarize(outcomes, self.tracker, self.teams, max(end_time, now))
        summary.update(self._run_figures(wall))
        if self.predictor is not None:
            summary["predicted_within_2x"] = _within_2x(outcomes)
        series = [(t, milli / 1000) for t, milli in self.tracker.series]
        users = user_rows(self.trace, outcomes) if self.shares is not None else []
        if self.shares is not None:
            for team in self.shares.teams.values():
                team.advance(max(end_time, now))
            summary.update(user_summary(users), heaviest_share=self.shares.share())
        return RunResult(
            self.spec.name, self.cluster.label, outcomes, summary, team_rows, series, users
        )

    def _run_figures(self, wall: float) -> dict:
        """The summary's figures about the run itself rather than its jobs."""
        return {
            "policy": self.spec.name,
            "cycles": self.cycles,
            "core_s": self.core_s,
            "wall_s": time.perf_counter() - wall,
            "capacity_gpus": self.cluster.gpus,
            "restart": self.options.restart,
            "cycle_s": self.options.cycle_s,
            "note": self.note,
            "hidden_jobs": self.hidden_jobs,
            **({"multi_node_jobs": self.multi_node[0], "multi_node_one_rack": self.multi_node[1]}
               if self.rack_of else {}),
        }  # fmt: skip


def tracker_pending_jobs(shapes: dict) -> int:
    """Pending jobs in one team's shape queues."""
    return sum(len(queue) for queue in shapes.values())


def _stderr(text: str) -> None:
    sys.stderr.write(text)
    sys.stderr.flush()


def _within_2x(outcomes: list[JobOutcome]) -> float:
    """Share of the predicted jobs whose prediction was within 2x of their run time."""
    predicted = [o for o in outcomes if o.predicted_s is not None and o.duration_s > 0]
    within = sum(0.5 <= o.predicted_s / o.duration_s <= 2 for o in predicted)
    return within / len(predicted) if predicted else 0.0
