"""People inside the simulated teams (issue 36): users for traces that have none, the per-user
limit the core enforces (R21.1, R21.2), and what the run measures per user.

**Splitting a team's jobs among users** (the shared traces carry no user column). Each team gets
``n`` users, ``n`` drawn uniformly from ``[low, high]`` (default 5-20); each of its jobs goes to
user ``k`` of ``1..n`` with probability proportional to ``1 / k ** s`` (Zipf, default ``s = 1``:
with 10 users the first submits about a third of the jobs, the tenth about 3 %). Both draws come
from ``random.Random(f"{seed}:{team}")`` in trace order, so a seed gives the same users on every
run and machine, and a team's users do not depend on the other teams. Users are named
``<team>.u<k>``. A job that already has a user keeps it.

**What is measured.** Per user: their jobs' mean and 95th-percentile queueing (finished jobs,
queueing as in `metrics.py`). Per team, its *heaviest user* is the one whose jobs ask for the most
GPU-seconds (GPUs x duration; ties by name); the **heaviest user's share** is the share of the
team's held GPU-seconds that user holds *while a teammate has a job waiting*: the moment the
issue names, one person's jobs holding the team's GPUs while a teammate waits. Over all teams it
is weighted by those GPU-seconds; None when no teammate of a heaviest user ever waited.
"""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass, replace
from pathlib import Path

from scheduler.model import UserLimit
from scheduler.predict import quantile

from .metrics import JobOutcome
from .trace import Trace

DEFAULT_USERS = (5, 20)
DEFAULT_SEED = 36
DEFAULT_EXPONENT = 1.0


def split_users(
    trace: Trace,
    users: tuple[int, int] = DEFAULT_USERS,
    seed: int = DEFAULT_SEED,
    exponent: float = DEFAULT_EXPONENT,
) -> Trace:
    """The trace with each team's jobs that have no user given to Zipf-weighted users (module
    doc); `users` is the (low, high) range of users per team."""
    low, high = users
    if not 1 <= low <= high:
        raise ValueError(f"users per team must be a range such as 5-20, not {low}-{high}")
    if not exponent >= 0:
        raise ValueError(f"the Zipf exponent must be 0 or more, not {exponent!r}")
    draws: dict[str, tuple[random.Random, list[float]]] = {}
    jobs = []
    for job in trace.jobs:
        if job.user:
            jobs.append(job)
            continue
        if job.team not in draws:
            rng = random.Random(f"{seed}:{job.team}")
            count = rng.randint(low, high)
            draws[job.team] = (rng, [1 / k**exponent for k in range(1, count + 1)])
        rng, weights = draws[job.team]
        (k,) = rng.choices(range(1, len(weights) + 1), weights=weights)
        jobs.append(replace(job, user=f"{job.team}.u{k}"))
    return Trace(jobs=jobs, skipped=trace.skipped, path=trace.path)


def parse_users(text: str) -> tuple[int, int]:
    """``"5-20"`` -> (5, 20); ``"8"`` -> (8, 8)."""
    low, _, high = text.partition("-")
    try:
        pair = (int(low), int(high or low))
    except ValueError:
        raise ValueError(f"--split-users wants a range such as 5-20, not {text!r}") from None
    if not 1 <= pair[0] <= pair[1]:
        raise ValueError(f"--split-users wants a range such as 5-20, not {text!r}")
    return pair


def user_limits(max_gpus: float | None, max_running: int | None) -> tuple[UserLimit, ...]:
    """Every team's per-user default limit as the core takes it (R21.1, R21.2); () when off."""
    if max_gpus is None and max_running is None:
        return ()
    return (UserLimit(max_gpus=max_gpus, max_running=max_running),)


def heaviest_users(trace: Trace) -> dict[str, str]:
    """Each team's user whose jobs ask for the most GPU-seconds (ties: the first name)."""
    asked: dict[str, dict[str, float]] = {}
    for job in trace.jobs:
        mine = asked.setdefault(job.team, {})
        mine[job.user] = mine.get(job.user, 0.0) + job.gpus * job.duration_s
    return {
        team: min(users, key=lambda user: (-users[user], user)) for team, users in asked.items()
    }


class _Team:
    __slots__ = ("alloc", "heavy", "heavy_alloc", "heavy_s", "held_s", "last", "waiting")

    def __init__(self, heavy: str):
        self.heavy = heavy
        self.alloc = self.heavy_alloc = 0  # thousandths of a GPU
        self.waiting = 0  # pending jobs of the heaviest user's teammates
        self.heavy_s = self.held_s = 0.0  # GPU-milli-seconds while a teammate waits
        self.last = 0.0

    def advance(self, t: float) -> None:
        """Add the GPU time held since the last change, counted only while a teammate of the
        heaviest user waits (the share's numerator and denominator), and move to `t`."""
        if self.waiting and t > self.last:
            self.held_s += self.alloc * (t - self.last)
            self.heavy_s += self.heavy_alloc * (t - self.last)
        self.last = t


class UserShares:
    """The heaviest user's share of their team's GPUs while a teammate waits (module doc). The
    engine reports every change: a job waits, stops waiting, or holds GPUs."""

    def __init__(self, trace: Trace):
        self.teams = {team: _Team(heavy) for team, heavy in heaviest_users(trace).items()}

    def waits(self, team: str, user: str, t: float, count: int) -> None:
        """`count` (+1 or -1) pending jobs of `user` at `t`."""
        tracker = self.teams[team]
        if user != tracker.heavy:
            tracker.advance(t)
            tracker.waiting += count

    def holds(self, team: str, user: str, t: float, milli: int) -> None:
        """`user` holds `milli` thousandths of a GPU more (or fewer) from `t`."""
        tracker = self.teams[team]
        tracker.advance(t)
        tracker.alloc += milli
        if user == tracker.heavy:
            tracker.heavy_alloc += milli

    def share(self) -> float | None:
        """Over every team, weighted by GPU-seconds held while a teammate waited; None when no
        teammate ever waited."""
        held = sum(team.held_s for team in self.teams.values())
        heavy = sum(team.heavy_s for team in self.teams.values())
        return heavy / held if held else None


@dataclass(frozen=True)
class UserRow:
    """One user's figures in a run."""

    team: str
    user: str
    jobs: int
    finished: int
    gpu_hours: float  # what their jobs asked for: GPUs x duration
    mean_queue_s: float
    p95_queue_s: float
    heaviest: bool


def user_rows(trace: Trace, outcomes: list[JobOutcome]) -> list[UserRow]:
    """Per user, their jobs' mean and 95th-percentile queueing (finished jobs) and size."""
    heavy = heaviest_users(trace)
    grouped: dict[tuple[str, str], list[tuple[float, JobOutcome]]] = {}
    for job, outcome in zip(trace.jobs, outcomes, strict=True):
        grouped.setdefault((job.team, job.user), []).append((job.gpus * job.duration_s, outcome))
    rows = []
    for (team, user), jobs in sorted(grouped.items()):
        waits = sorted(o.queued_s for _, o in jobs if o.finished)
        rows.append(UserRow(
            team, user, len(jobs), len(waits), sum(size for size, _ in jobs) / 3600,
            sum(waits) / len(waits) if waits else 0.0,
            quantile(waits, 0.95) if waits else 0.0, heavy.get(team) == user,
        ))  # fmt: skip
    return rows


def user_summary(rows: list[UserRow]) -> dict[str, float]:
    """The per-user figures in a few numbers: the mean over users of their mean queueing, the
    95th percentile over users of their p95, and the heaviest users' mean against the rest's."""
    rows = [row for row in rows if row.finished]  # a user with nothing finished: no queueing
    if not rows:
        return {}
    means = sorted(row.mean_queue_s for row in rows)
    p95s = sorted(row.p95_queue_s for row in rows)
    heavy = [row.mean_queue_s for row in rows if row.heaviest]
    rest = [row.mean_queue_s for row in rows if not row.heaviest]
    return {
        "users": len(rows),
        "user_mean_queue_s": sum(means) / len(means),
        "user_p95_queue_s_p95": quantile(p95s, 0.95),
        "heaviest_mean_queue_s": sum(heavy) / len(heavy) if heavy else 0.0,
        "others_mean_queue_s": sum(rest) / len(rest) if rest else 0.0,
    }


USER_COLUMNS = ["policy", "team", "user", "heaviest", "jobs", "finished", "gpu_hours",
                "mean_queue_s", "p95_queue_s"]  # fmt: skip
USER_SUMMARY_COLUMNS = ["policy", "setting", "users", "user_mean_queue_s",
                        "user_p95_queue_s_p95", "heaviest_mean_queue_s", "others_mean_queue_s",
                        "heaviest_share"]  # fmt: skip


def user_table(results: list) -> str:
    """The per-user figures of each policy as fixed-width text (seconds, shares of 1)."""
    header = (
        f"{'policy':<13}{'users':>7}{'user mean q':>13}{'p95 of p95 q':>14}"
        f"{'heaviest q':>12}{'others q':>10}{'heaviest share':>16}"
    )
    lines = [header, "-" * len(header)]
    for r in results:
        s = r.summary
        share = s.get("heaviest_share")
        lines.append(
            f"{r.policy:<13}{s.get('users', 0):>7}{s.get('user_mean_queue_s', 0):>13,.0f}"
            f"{s.get('user_p95_queue_s_p95', 0):>14,.0f}{s.get('heaviest_mean_queue_s', 0):>12,.0f}"
            f"{s.get('others_mean_queue_s', 0):>10,.0f}"
            f"{'n/a' if share is None else f'{share:.3f}':>16}"
        )
    lines.append(
        "user mean q = mean over users of their mean queueing; p95 of p95 q = 95th percentile "
        "over users of their p95; heaviest share = the heaviest user's share of their team's "
        "GPUs while a teammate waits (docs/simulation.md)"
    )
    return "\n".join(lines)


def write_user_csvs(out: Path, results: list) -> list[Path]:
    """per_user.csv (every user of every policy) and user_summary.csv in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "per_user.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(USER_COLUMNS)
        for r in results:
            for row in r.users:
                values = {"policy": r.policy, **{k: getattr(row, k) for k in USER_COLUMNS[1:]}}
                writer.writerow([_cell(values.get(c)) for c in USER_COLUMNS])
    summary = out / "user_summary.csv"
    with summary.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(USER_SUMMARY_COLUMNS)
        for r in results:
            row = {**r.summary, "policy": r.policy, "setting": r.setting}
            writer.writerow([_cell(row.get(c)) for c in USER_SUMMARY_COLUMNS])
    return [path, summary]


def _cell(value) -> object:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return value
