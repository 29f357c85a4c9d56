"""What a simulated run measures, and the definitions the report prints.

Per job (finished jobs only; jobs still pending at the end are counted as unfinished):

- **JCT** = completion - submit.
- **queueing** = all the time the job spent pending: submit -> first start plus every
  eviction -> restart gap. JCT = queueing + run time, run time including runs thrown away by an
  eviction (restart from zero). **first wait** = first start - submit is reported too.

Per cluster (capacity C GPUs, `alloc(t)` the GPUs held by running jobs, as scheduled):

- **makespan** = last completion - first submission.
- **utilisation** = integral of alloc / (C x makespan); **utilisation over the submission span**
  = the same over [first, last submission], free of the drain at the end.
- **goodput** = GPU-seconds of the finished jobs' own run (gpus x duration) / (C x makespan):
  utilisation without work lost to restarts.
- **idle while pending** = integral of (C - alloc) over the time some job is pending / (C x that
  time): the share of capacity left unallocated while work waits (fragmentation, limits,
  head-of-line blocking). A fraction counts as its fraction (0.5 GPU = 0.5 allocated).
- With ``--round-up-fractions`` a 0.3-GPU pod holds a whole GPU: **requested utilisation** and
  **unrequested while pending** repeat the two figures above with what the pods asked for (0.3)
  instead of what they hold (1), showing the capacity rounding wastes. Without the flag they
  equal utilisation and idle while pending.
- **evictions**, **moves** (consolidation / reclaim re-placements, R8.5; a move restarts the job
  like an eviction does) and the GPU-hours of run time thrown away.

Per team (quota Q, demand = GPUs of its running + pending jobs, held = GPUs of its running jobs):

- **asking time**: time with demand >= Q (a team with quota 0 never "asks": n/a).
- **fairness (quota held)** = the brief's figure, continuous: share of the asking time with
  held >= Q.
- **fairness (job-granular)**: share of the asking time the team was *not short*, where short
  means some pending job of the team would fit under its quota (held + that job <= Q) and the
  scheduler has already had a cycle to act on it. This removes two artefacts the plain figure
  charges to the policy: a team holding Q - 2 GPUs whose smallest waiting job needs 4 cannot
  get it without going over quota (R9.2 lets a team reclaim only up to its fair share), and a
  GPU freed by a completion is only re-used at the next cycle tick. It is the KAI guarantee in
  measurable form: "a team asking for its quota gets it, in units of its own jobs, within a
  cycle" (R2.7, R9.2-R9.4). The minimum over teams is the headline fairness figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from scheduler.predict import quantile

MILLI = 1000


class TeamTracker:
    """One team's held and asked GPUs (thousandths) over virtual time, for the fairness
    figures. Call :meth:`advance` before every change, :meth:`settle_short` after changes."""

    __slots__ = (
        "alloc",
        "asking_s",
        "demand",
        "gpu_s",
        "held_s",
        "last",
        "name",
        "pending",
        "quota",
        "short_s",
        "short_seen",
    )

    def __init__(self, name: str, quota_milli: int):
        self.name = name
        self.quota = quota_milli
        self.alloc = 0
        self.demand = 0
        self.pending: dict[int, int] = {}  # job size (milli) -> pending jobs of that size
        self.last = 0.0
        self.asking_s = 0.0
        self.held_s = 0.0
        self.short_s = 0.0
        self.gpu_s = 0.0  # allocated GPU-seconds
        self.short_seen = False

    def asking(self) -> bool:
        """Demand reaches the quota (teams with quota 0 never count as asking)."""
        return self.quota > 0 and self.demand >= self.quota

    def short(self) -> bool:
        """Asking, and some pending job would still fit under the quota."""
        if not self.pending or not self.asking():
            return False
        return self.alloc + min(self.pending) <= self.quota

    def advance(self, t: float) -> None:
        """Account the time since the last change under the state that held during it."""
        dt = t - self.last
        if dt > 0:
            self.gpu_s += self.alloc * dt / MILLI
            if self.asking():
                self.asking_s += dt
                if self.alloc >= self.quota:
                    self.held_s += dt
                if self.short_seen and self.short():
                    self.short_s += dt
        self.last = t

    def change(self, t: float, alloc: int = 0, demand: int = 0) -> None:
        """Held and asked GPUs move by `alloc` / `demand` thousandths at time `t`."""
        self.advance(t)
        self.alloc += alloc
        self.demand += demand
        if not self.short():
            self.short_seen = False

    def add_pending(self, size: int) -> None:
        """A job of `size` thousandths joins the team's pending set."""
        self.pending[size] = self.pending.get(size, 0) + 1

    def remove_pending(self, size: int) -> None:
        """A job of `size` thousandths leaves the pending set (started)."""
        left = self.pending[size] - 1
        if left:
            self.pending[size] = left
        else:
            del self.pending[size]
        if not self.short():
            self.short_seen = False

    def after_cycle(self, t: float) -> None:
        """The scheduler has acted: a shortage still present from now on is charged."""
        self.advance(t)
        self.short_seen = self.short()

    def fairness(self) -> float | None:
        """Job-granular fairness (see the module doc); None when the team never asked."""
        if self.asking_s <= 0:
            return None
        return 1.0 - self.short_s / self.asking_s

    def fairness_raw(self) -> float | None:
        """Share of the asking time with held >= quota; None when the team never asked."""
        if self.asking_s <= 0:
            return None
        return self.held_s / self.asking_s


class ClusterTracker:
    """Allocated GPUs over virtual time: the integrals behind utilisation and idle-while-pending,
    and a step series for the report's chart."""

    def __init__(self, capacity_milli: int, last_submit: float):
        self.capacity = capacity_milli
        self.last_submit = last_submit
        self.alloc = 0
        self.pending = 0
        self.last = 0.0
        self.alloc_s = 0.0  # milli-seconds of allocation
        self.alloc_span_s = 0.0  # same within [0, last submit]
        self.pending_time = 0.0
        self.idle_pending_s = 0.0
        self.requested = 0  # what running jobs asked for (before --round-up-fractions)
        self.requested_s = 0.0
        self.idle_requested_pending_s = 0.0
        self.series: list[tuple[float, int]] = [(0.0, 0)]

    def advance(self, t: float) -> None:
        """Integrate up to `t` with the current allocation."""
        dt = t - self.last
        if dt <= 0:
            return
        self.alloc_s += self.alloc * dt
        self.requested_s += self.requested * dt
        inside = min(t, self.last_submit) - self.last
        if inside > 0:
            self.alloc_span_s += self.alloc * inside
        if self.pending:
            self.pending_time += dt
            self.idle_pending_s += (self.capacity - self.alloc) * dt
            self.idle_requested_pending_s += (self.capacity - self.requested) * dt
        self.last = t

    def change(self, t: float, alloc: int = 0, pending: int = 0, requested: int = 0) -> None:
        """Allocation, the running jobs' own requests and the pending count move at `t`."""
        self.advance(t)
        self.requested += requested
        if alloc:
            self.alloc += alloc
            if self.series[-1][0] == t:
                self.series[-1] = (t, self.alloc)
            else:
                self.series.append((t, self.alloc))
        self.pending += pending


@dataclass
class JobOutcome:
    """What happened to one job in a run."""

    job_id: str
    team: str
    gpus: float
    pods: int
    submit_s: float
    duration_s: float
    first_start_s: float | None = None
    end_s: float | None = None
    queued_s: float = 0.0
    evictions: int = 0
    moves: int = 0
    lost_s: float = 0.0
    backfilled: int = 0
    predicted_s: float | None = None
    basis: str = ""

    @property
    def finished(self) -> bool:
        """True when the job completed within the run."""
        return self.end_s is not None

    @property
    def jct_s(self) -> float | None:
        """Completion - submit, None when unfinished."""
        return None if self.end_s is None else self.end_s - self.submit_s

    @property
    def first_wait_s(self) -> float | None:
        """First start - submit, None when never started."""
        return None if self.first_start_s is None else self.first_start_s - self.submit_s


@dataclass
class RunResult:
    """One policy's run: per-job outcomes, summary and per-team rows, the allocation series."""

    policy: str
    setting: str
    jobs: list[JobOutcome]
    summary: dict
    teams: list[dict]
    series: list[tuple[float, float]] = field(default_factory=list)
    users: list = field(default_factory=list)  # per-user rows when the trace has users


def _stats(values: list[float], prefix: str) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {f"avg_{prefix}_s": 0.0, **{f"p{p}_{prefix}_s": 0.0 for p in (50, 95, 99)}}
    return {
        f"avg_{prefix}_s": sum(ordered) / len(ordered),
        **{f"p{p}_{prefix}_s": quantile(ordered, p / 100) for p in (50, 95, 99)},
    }


def summarize(
    jobs: list[JobOutcome],
    cluster: ClusterTracker,
    teams: dict[str, TeamTracker],
    end_time: float,
) -> tuple[dict, list[dict]]:
    """The summary row and the per-team rows of one run (definitions in the module doc)."""
    done = [job for job in jobs if job.finished]
    summary = {
        **_job_figures(jobs, done),
        **_capacity_figures(jobs, done, cluster),
        **_disruption_figures(jobs),
    }
    rows = _team_rows(jobs, teams, end_time)
    summary.update(_fairness_figures(rows))
    return summary, rows


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _per(amount: float, duration: float, capacity: float) -> float:
    """`amount` as a share of `capacity` held for `duration`; 0 for an empty duration."""
    return amount / (capacity * duration) if duration else 0.0


def _job_figures(jobs: list[JobOutcome], done: list[JobOutcome]) -> dict:
    """Counts, JCT and queueing of the finished jobs."""
    return {
        "jobs": len(jobs),
        "finished": len(done),
        "unfinished": len(jobs) - len(done),
        **_stats([job.jct_s for job in done], "jct"),
        **_stats([job.queued_s for job in done], "queue"),
        "avg_first_wait_s": _mean([job.first_wait_s for job in done]),
    }


def _capacity_figures(
    jobs: list[JobOutcome], done: list[JobOutcome], cluster: ClusterTracker
) -> dict:
    """Makespan, utilisation, goodput and the capacity left idle while work waited."""
    first_submit = min((job.submit_s for job in jobs), default=0.0)
    last_end = max((job.end_s for job in done), default=first_submit)
    makespan = max(last_end - first_submit, 0.0)
    span = max(cluster.last_submit - first_submit, 0.0)
    capacity = cluster.capacity / MILLI
    useful = sum(job.gpus * job.duration_s for job in done)
    pending_time = cluster.pending_time
    return {
        "makespan_s": makespan,
        "utilization": _per(cluster.alloc_s / MILLI, makespan, capacity),
        "utilization_submit_span": _per(cluster.alloc_span_s / MILLI, span, capacity),
        "goodput": _per(useful, makespan, capacity),
        "idle_while_pending": _per(cluster.idle_pending_s, pending_time, cluster.capacity),
        "utilization_requested": _per(cluster.requested_s / MILLI, makespan, capacity),
        "unrequested_while_pending": _per(
            cluster.idle_requested_pending_s, pending_time, cluster.capacity
        ),
        "pending_time_s": pending_time,
    }


def _disruption_figures(jobs: list[JobOutcome]) -> dict:
    """Evictions, moves and the run time they threw away; jobs started by backfill."""
    return {
        "evictions": sum(job.evictions for job in jobs),
        "moves": sum(job.moves for job in jobs),
        "lost_gpu_h": sum(job.lost_s * job.gpus for job in jobs) / 3600,
        "backfilled": sum(job.backfilled for job in jobs),
    }


def _team_rows(
    jobs: list[JobOutcome], teams: dict[str, TeamTracker], end_time: float
) -> list[dict]:
    """One row per team, in the order of `teams`, its trackers brought up to `end_time`."""
    by_team: dict[str, list[JobOutcome]] = {}
    for job in jobs:
        by_team.setdefault(job.team, []).append(job)
    rows = []
    for name, tracker in teams.items():
        tracker.advance(end_time)
        rows.append(_team_row(name, tracker, by_team.get(name, [])))
    return rows


def _team_row(name: str, tracker: TeamTracker, mine: list[JobOutcome]) -> dict:
    finished = [job for job in mine if job.finished]
    return {
        "team": name,
        "quota_gpus": tracker.quota / MILLI,
        "jobs": len(mine),
        "finished": len(finished),
        "avg_queue_s": _mean([j.queued_s for j in finished]),
        "avg_jct_s": _mean([j.jct_s for j in finished]),
        "gpu_h": tracker.gpu_s / 3600,
        "asking_h": tracker.asking_s / 3600,
        "fairness": tracker.fairness(),
        "fairness_raw": tracker.fairness_raw(),
    }


def _fairness_figures(rows: list[dict]) -> dict:
    """The lowest fairness over the teams that asked (1 when none did)."""
    scored = [row["fairness"] for row in rows if row["fairness"] is not None]
    raw = [row["fairness_raw"] for row in rows if row["fairness_raw"] is not None]
    return {
        "min_fairness": min(scored) if scored else 1.0,
        "min_fairness_raw": min(raw) if raw else 1.0,
    }
