"""Run-time prediction from finished jobs, for backfill's reservations (Policy.backfill).

Backfill needs each job's expected run time (`Job.expected_s`): a reservation for the first
blocked job is placed at the time predicted ends free enough GPUs, and a later job may start
ahead of it only if it is predicted to end before then. Users rarely give good estimates
(and Philly has none), so the predictor learns from jobs that finished.

**Groups, most specific first.** A job is predicted from the first group below that holds at
least `min_samples` finished jobs (default 3):

1. ``user+project+image+gpus``  2. ``user+gpus``  3. ``project+gpus``  4. ``project``
5. ``gpus``  6. ``everyone``  — and when even that is too small, a fixed ``default``.

A group that needs a field the job does not have (empty user or image) is skipped: an unknown
user is not a user. The prediction is a quantile of the group's durations (default the median,
0.5); a higher quantile predicts more conservatively (fewer overruns, fewer backfills).

**User estimates.** When the job carries the user's own estimate, the prediction is
``min(estimate, history)``: an estimate works like a time limit, an upper bound users inflate
(they are charged nothing for it), so history may only lower it. With no usable history (only the
``default`` level) the estimate is taken as is. `basis` says which won: ``"estimate"`` or the
group's name.

**Cost.** Each group keeps its most recent `window` durations (default 1,000) twice: in arrival
order (to drop the oldest) and sorted (`bisect.insort`), so learning is O(window) memory moves
at worst and a prediction is O(1) after the group lookup. The window also makes the predictor
follow drift (a team's workload changes over a month).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_S = 3600.0
LEVELS = ("user+project+image+gpus", "user+gpus", "project+gpus", "project", "gpus", "everyone")


def quantile(ordered: list[float], q: float) -> float:
    """The `q` quantile of an ascending list, linear between neighbours ('inclusive' method,
    so the 0.5 quantile of an even-length list is the mean of the two middle values)."""
    if not ordered:
        raise ValueError("quantile of an empty list")
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    fraction = position - low
    return ordered[low] + (ordered[high] - ordered[low]) * fraction


@dataclass(frozen=True)
class Prediction:
    """A predicted run time in seconds and the group (or ``"estimate"``) it came from."""

    seconds: float
    basis: str


class _Window:
    """One group's most recent durations, in arrival order and sorted."""

    __slots__ = ("recent", "sorted")

    def __init__(self) -> None:
        self.recent: deque[float] = deque()
        self.sorted: list[float] = []

    def add(self, value: float, window: int) -> None:
        """Keep `value`; past `window` samples, forget the oldest."""
        self.recent.append(value)
        bisect.insort(self.sorted, value)
        if len(self.recent) > window:
            oldest = self.recent.popleft()
            del self.sorted[bisect.bisect_left(self.sorted, oldest)]


def _keys(user: str, project: str, image: str, gpus: float) -> list[tuple[str, tuple]]:
    """(level, key) of every group the job belongs to, most specific first; levels needing a
    missing user or image are left out."""
    keys: list[tuple[str, tuple]] = []
    if user and image:
        keys.append((LEVELS[0], (user, project, image, gpus)))
    if user:
        keys.append((LEVELS[1], (user, gpus)))
    keys.append((LEVELS[2], (project, gpus)))
    keys.append((LEVELS[3], (project,)))
    keys.append((LEVELS[4], (gpus,)))
    keys.append((LEVELS[5], ()))
    return keys


class Predictor:
    """Learns durations of finished jobs online and predicts new ones (see the module doc)."""

    def __init__(
        self,
        quantile: float = 0.5,
        min_samples: int = 3,
        default_s: float = DEFAULT_S,
        window: int = 1000,
    ):
        if not 0.0 <= quantile <= 1.0:
            raise ValueError("quantile must be within [0, 1]")
        if min_samples < 1 or window < min_samples:
            raise ValueError("need 1 <= min_samples <= window")
        self.q = quantile
        self.min_samples = min_samples
        self.default_s = default_s
        self.window = window
        self.groups: dict[tuple[str, tuple], _Window] = {}
        self.learned = 0

    def learn(self, user: str, project: str, image: str, gpus: float, duration_s: float) -> None:
        """Add one finished job's true run time to every group it belongs to."""
        for key in _keys(user, project, image, gpus):
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Window()
            group.add(float(duration_s), self.window)
        self.learned += 1

    def history(self, user: str, project: str, image: str, gpus: float) -> Prediction:
        """The quantile of the most specific group with `min_samples` jobs, else the default."""
        for key in _keys(user, project, image, gpus):
            group = self.groups.get(key)
            if group is not None and len(group.sorted) >= self.min_samples:
                return Prediction(quantile(group.sorted, self.q), key[0])
        return Prediction(self.default_s, "default")

    def predict(
        self,
        user: str,
        project: str,
        image: str,
        gpus: float,
        estimate_s: float | None = None,
    ) -> Prediction:
        """Predicted run time: history, lowered to the user's estimate when one is given
        (``min(estimate, history)``; the estimate alone when there is no usable history)."""
        learned = self.history(user, project, image, gpus)
        if estimate_s is None or estimate_s <= 0:
            return learned
        if learned.basis == "default" or estimate_s <= learned.seconds:
            return Prediction(float(estimate_s), "estimate")
        return learned


@dataclass(frozen=True)
class EvalJob:
    """What evaluation needs of a job: who ran what, when it was submitted, how long it ran."""

    submit_s: float
    duration_s: float
    project: str
    gpus: float
    user: str = ""
    image: str = ""
    estimate_s: float | None = None


@dataclass
class Evaluation:
    """Accuracy on the test part: mean absolute error, share within 2x, per-basis counts."""

    n: int
    mae_s: float
    within_2x: float
    by_basis: dict[str, int] = field(default_factory=dict)
    train: int = 0


def evaluate(
    jobs: Iterable[EvalJob],
    train_fraction: float = 0.5,
    online: bool = True,
    predictor: Predictor | None = None,
) -> Evaluation:
    """Score the predictor on the later jobs of a trace (by submit time).

    The first `train_fraction` of jobs (by submit time, ties by input order) only teach; the
    rest are predicted at their submission. With `online=True` (the simulator's situation) every
    job — training or test — is learned at its completion time, `submit + duration` (no
    queueing assumed), so a test job is predicted from every job finished before it was
    submitted, never from one still running. With `online=False` only the training jobs are
    learned, all before the first test job, and nothing during the test.
    A prediction is "within 2x" when prediction / actual is in [0.5, 2]; a job of duration 0
    counts as within only when predicted as 0.
    """
    predictor = predictor or Predictor()
    ordered = sorted(enumerate(jobs), key=lambda item: (item[1].submit_s, item[0]))
    cut = math.floor(len(ordered) * train_fraction)
    finishing: list[tuple[float, int, EvalJob]] = []
    errors = 0.0
    within = 0
    by_basis: dict[str, int] = {}
    n = 0

    def learn(job: EvalJob) -> None:
        """Teach the predictor one finished job."""
        predictor.learn(job.user, job.project, job.image, job.gpus, job.duration_s)

    if not online:
        for _, job in ordered[:cut]:
            learn(job)
    for position, (index, job) in enumerate(ordered):
        if online:
            while finishing and finishing[0][0] <= job.submit_s:
                learn(heapq.heappop(finishing)[2])
            heapq.heappush(finishing, (job.submit_s + job.duration_s, index, job))
        if position < cut:
            continue
        guess = predictor.predict(job.user, job.project, job.image, job.gpus, job.estimate_s)
        n += 1
        errors += abs(guess.seconds - job.duration_s)
        by_basis[guess.basis] = by_basis.get(guess.basis, 0) + 1
        if job.duration_s > 0:
            within += 0.5 <= guess.seconds / job.duration_s <= 2.0
        else:
            within += guess.seconds == 0
    return Evaluation(
        n=n,
        mae_s=errors / n if n else 0.0,
        within_2x=within / n if n else 0.0,
        by_basis=dict(sorted(by_basis.items(), key=lambda kv: -kv[1])),
        train=cut,
    )
