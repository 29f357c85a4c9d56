"""Run-time prediction from finished jobs, for backfill's reservations (Policy.backfill).

Backfill needs each job's expected run time (`Job.expected_s`): a reservation for the first
blocked job is placed at the time predicted ends free enough GPUs, and a later job may start
ahead of it only if it is predicted to end before then. Users rarely give good estimates
(and Philly has none), so the predictor learns from jobs that finished.

**Groups, most specific first.** A job is predicted from the first group below that holds at
least `min_samples` finished jobs (default 3; one for a burst):

0. ``burst``  1. ``user+project+image+gpus``  2. ``user+gpus``  3. ``project+gpus``
4. ``project``  5. ``gpus``  6. ``everyone``  — and when even that is too small, a fixed
``default``.

**Bursts.** Researchers launch sweeps: the same image on the same GPUs, a few seconds apart,
differing in a learning rate or a seed. Such jobs run for similar times, far more alike than a
team's jobs in general (on the Philly 50k window, within 2x of their burst's median for 81 % of
the jobs in bursts, of their team's for 44 %; docs/simulation.md §6). A burst
(:class:`Bursts`) is a chain of jobs with the same user, project, image and GPUs, each submitted
within `gap_s` (default 60 s) of the one before. One finished job of a burst predicts the rest,
and its running jobs count as at least this long. Since a burst's jobs are submitted together,
the burst says nothing at submission; it pays off as the first of them finish, so predictions are
refreshed while jobs wait (the portal's ETA refresh, the simulator's outlook).

A group that needs a field the job does not have (empty user or image) is skipped: an unknown
user is not a user. The prediction is a quantile of the group's durations (default the median,
0.5); a higher quantile predicts more conservatively (fewer overruns, fewer backfills).

**User estimates.** When the job carries the user's own estimate, the prediction is
``min(estimate, history)``: an estimate works like a time limit, an upper bound users inflate
(they are charged nothing for it), so history may only lower it. With no usable history (only the
``default`` level) the estimate is taken as is. `basis` says which won: ``"estimate"`` or the
group's name.

**Jobs still running (censoring).** Learning only from finished jobs predicts too short
wherever jobs wait: at any moment the jobs that have finished are mostly the short ones, and the
long ones are still running (on the 2k Philly window with a quarter of the nodes, predictions
made that way were a median 13x too short). :meth:`Predictor.running` hands the predictor the jobs
running now, each known to take at least as long as it has run so far. A group with running jobs
is then predicted by the Kaplan-Meier product-limit estimator (Kaplan and Meier, JASA 1958), which
counts each running job as "longer than its run so far" instead of ignoring it: the prediction is
the first finished duration at which the estimated share of the group's jobs still running falls
to 1 - `quantile` (the plain quantile when no job of the group is running). When the running jobs
are so many and so long that it never falls that far, the prediction is the longest run seen — a
lower bound.

**Outlook of a running job.** :meth:`Predictor.outlook` predicts how long a job that has already
run `ran_s` still has to go: the same estimator, conditional on lasting past `ran_s` (the first
finished duration beyond `ran_s` by which the share still running falls to 1 - `quantile` of what
it was at `ran_s`), minus `ran_s`; None when the job has outlived its group's distribution (no
finished duration is that long), so it ends at no predictable time. Run times are heavy-tailed,
so a job that has run long is likely to run longer still; a plain `started + expected_s` says it
ends any moment once it passes its prediction. The simulator and the portal give each running
job's outlook to backfill as `Job.expected_end` (B1).

**Cost.** Each group keeps its most recent `window` durations (default 1,000) twice: in arrival
order (to drop the oldest) and sorted (`bisect.insort`), so learning is O(window) memory moves
at worst and a prediction is O(1) after the group lookup. The window also makes the predictor
follow drift (a team's workload changes over a month). With running jobs, a group's survival
curve is built once (O(window + running), linear in the merged lists) and kept until the group
learns a job or the running jobs are replaced; a prediction or an outlook is then a binary search.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_S = 3600.0
BURST_GAP_S = 60.0
LEVELS = (
    "burst",
    "user+project+image+gpus",
    "user+gpus",
    "project+gpus",
    "project",
    "gpus",
    "everyone",
)


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


@dataclass(frozen=True)
class Running:
    """A job still running, for :meth:`Predictor.running`: who runs what, and how long it has
    run so far (`ran_s`; with checkpoints, the work kept from earlier runs as well)."""

    user: str
    project: str
    image: str
    gpus: float
    ran_s: float
    burst: str = ""


class Bursts:
    """Assigns each job its burst (see the module doc): jobs with the same user, project, image
    and GPUs, each submitted within `gap_s` of the one before, share one. Jobs must be handed in
    submission order; :meth:`assign` returns the burst's name, the `name` of its first job."""

    def __init__(self, gap_s: float = BURST_GAP_S):
        if gap_s < 0:
            raise ValueError("gap_s must be >= 0")
        self.gap_s = gap_s
        self._last: dict[tuple, tuple[float, str]] = {}  # shape -> (last submit, burst)

    def assign(
        self, user: str, project: str, image: str, gpus: float, submitted_s: float, name: str
    ) -> str:
        """The burst of a job submitted at `submitted_s`; `name` names a burst it starts."""
        shape = (user, project, image, gpus)
        last = self._last.get(shape)
        joins = last is not None and 0 <= submitted_s - last[0] <= self.gap_s
        burst = last[1] if joins else name
        self._last[shape] = (submitted_s, burst)
        return burst


class _Curve:
    """One group's Kaplan-Meier survival curve: `times` are its distinct finished durations,
    ascending, and `surv[i]` the estimated share of its jobs still running just after
    `times[i]`; `longest` is the longest run seen, finished or running."""

    __slots__ = ("descending", "longest", "surv", "times")

    def __init__(self, events: list[float], censored: list[float]):
        times: list[float] = []
        surv: list[float] = []
        share = 1.0
        at_risk = len(events) + len(censored)
        i = j = 0
        while i < len(events):
            t = events[i]
            while j < len(censored) and censored[j] < t:  # ran less than t: not known to reach t
                at_risk -= 1
                j += 1
            ended = 0
            while i < len(events) and events[i] == t:
                ended += 1
                i += 1
            share *= 1 - ended / at_risk
            at_risk -= ended
            times.append(t)
            surv.append(share)
        self.times = times
        self.surv = surv
        self.descending = [-value for value in surv]  # ascending, for bisect
        self.longest = max(events[-1] if events else 0.0, censored[-1] if censored else 0.0)

    def _first_at_most(self, share: float, start: int = 0) -> int:
        """Index of the first time (from `start`) at which the share still running is at most
        `share` (len(times) when it never falls that far)."""
        return bisect.bisect_left(self.descending, -(share + 1e-12), lo=start)

    def quantile(self, q: float) -> float:
        """The first finished duration by which at most 1 - q of the jobs still run, else the
        longest run seen (a lower bound)."""
        index = self._first_at_most(1.0 - q)
        return self.times[index] if index < len(self.times) else self.longest

    def left(self, ran_s: float, q: float) -> float | None:
        """Run time left for a job that has run `ran_s`: the q quantile of the durations beyond
        `ran_s`, minus `ran_s`; None when no finished duration is long enough to tell."""
        start = bisect.bisect_right(self.times, ran_s)
        reached = self.surv[start - 1] if start else 1.0
        if reached <= 0.0:
            return None
        index = self._first_at_most((1.0 - q) * reached, start)
        return self.times[index] - ran_s if index < len(self.times) else None


def _keys(
    user: str, project: str, image: str, gpus: float, burst: str = ""
) -> list[tuple[str, tuple]]:
    """(level, key) of every group the job belongs to, most specific first; levels needing a
    missing burst, user or image are left out."""
    keys: list[tuple[str, tuple]] = []
    if burst:
        keys.append((LEVELS[0], (project, burst)))
    if user and image:
        keys.append((LEVELS[1], (user, project, image, gpus)))
    if user:
        keys.append((LEVELS[2], (user, gpus)))
    keys.append((LEVELS[3], (project, gpus)))
    keys.append((LEVELS[4], (project,)))
    keys.append((LEVELS[5], (gpus,)))
    keys.append((LEVELS[6], ()))
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
        self.censored: dict[tuple[str, tuple], list[float]] = {}  # group -> running jobs' runs
        self._curves: dict[tuple[str, tuple], _Curve] = {}

    def learn(
        self, user: str, project: str, image: str, gpus: float, duration_s: float, burst: str = ""
    ) -> None:
        """Add one finished job's true run time to every group it belongs to."""
        for key in _keys(user, project, image, gpus, burst):
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Window()
            group.add(float(duration_s), self.window)
            self._curves.pop(key, None)
        self.learned += 1

    def running(self, jobs: Iterable[Running]) -> None:
        """The jobs running now, each taking at least as long as it has run: every later
        prediction counts them (Kaplan-Meier, see the module doc) until the next call."""
        censored: dict[tuple[str, tuple], list[float]] = {}
        for job in jobs:
            for key in _keys(job.user, job.project, job.image, job.gpus, job.burst):
                censored.setdefault(key, []).append(float(job.ran_s))
        for runs in censored.values():
            runs.sort()
        self.censored = censored
        self._curves.clear()

    def _curve(self, key: tuple[str, tuple], group: _Window) -> _Curve:
        curve = self._curves.get(key)
        if curve is None:
            curve = self._curves[key] = _Curve(group.sorted, self.censored.get(key, []))
        return curve

    def _group(self, user: str, project: str, image: str, gpus: float, burst: str = ""):
        """(key, window) of the most specific group with `min_samples` finished jobs (one for
        a burst), or None."""
        for key in _keys(user, project, image, gpus, burst):
            group = self.groups.get(key)
            need = 1 if key[0] == LEVELS[0] else self.min_samples
            if group is not None and len(group.sorted) >= need:
                return key, group
        return None

    def history(
        self, user: str, project: str, image: str, gpus: float, burst: str = ""
    ) -> Prediction:
        """The quantile of the most specific group with `min_samples` finished jobs (counting
        its running jobs, if any), else the default."""
        found = self._group(user, project, image, gpus, burst)
        if found is None:
            return Prediction(self.default_s, "default")
        key, group = found
        if key in self.censored:
            return Prediction(self._curve(key, group).quantile(self.q), key[0])
        return Prediction(quantile(group.sorted, self.q), key[0])

    def outlook(
        self,
        user: str,
        project: str,
        image: str,
        gpus: float,
        ran_s: float,
        estimate_s: float | None = None,
        burst: str = "",
    ) -> float | None:
        """Predicted run time left for a job that has run `ran_s` (see the module doc): None
        when it has outlived its group's finished jobs. The user's estimate bounds it as in
        :meth:`predict` while the job is within it (`estimate_s - ran_s`); with no usable
        history, the default run time less `ran_s` (never below 0)."""
        found = self._group(user, project, image, gpus, burst)
        if found is None:
            left: float | None = max(self.default_s - ran_s, 0.0)
        else:
            left = self._curve(*found).left(ran_s, self.q)
        if estimate_s is not None and estimate_s > ran_s:
            bound = estimate_s - ran_s
            left = bound if left is None else min(left, bound)
        return left

    def expected_end(
        self,
        user: str,
        project: str,
        image: str,
        gpus: float,
        ran_s: float,
        now: float,
        estimate_s: float | None = None,
        burst: str = "",
    ) -> float:
        """The running job's outlook as `Job.expected_end` (B1): `now` plus the run left
        (:meth:`outlook`), or infinity when it has outlived its group (no predictable end)."""
        left = self.outlook(user, project, image, gpus, ran_s, estimate_s, burst)
        return math.inf if left is None else now + left

    def predict(
        self,
        user: str,
        project: str,
        image: str,
        gpus: float,
        estimate_s: float | None = None,
        burst: str = "",
    ) -> Prediction:
        """Predicted run time: history, lowered to the user's estimate when one is given
        (``min(estimate, history)``; the estimate alone when there is no usable history)."""
        learned = self.history(user, project, image, gpus, burst)
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
    burst_gap_s: float | None = BURST_GAP_S,
) -> Evaluation:
    """Score the predictor on the later jobs of a trace (by submit time).

    The first `train_fraction` of jobs (by submit time, ties by input order) only teach; the
    rest are predicted at their submission. With `online=True` (the simulator's situation) every
    job — training or test — is learned at its completion time, `submit + duration` (no
    queueing assumed), so a test job is predicted from every job finished before it was
    submitted, never from one still running. With `online=False` only the training jobs are
    learned, all before the first test job, and nothing during the test.
    Jobs are grouped into bursts with `burst_gap_s` (None: no bursts); as a job is predicted
    at submission, its burst helps only where jobs of it finished earlier (a long chain).
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
    bursts = Bursts(burst_gap_s) if burst_gap_s is not None else None
    burst = {
        index: bursts.assign(job.user, job.project, job.image, job.gpus, job.submit_s, str(index))
        if bursts is not None
        else ""
        for index, job in ordered
    }

    def learn(index: int, job: EvalJob) -> None:
        """Teach the predictor one finished job."""
        predictor.learn(job.user, job.project, job.image, job.gpus, job.duration_s, burst[index])

    if not online:
        for index, job in ordered[:cut]:
            learn(index, job)
    for position, (index, job) in enumerate(ordered):
        if online:
            while finishing and finishing[0][0] <= job.submit_s:
                learn(*heapq.heappop(finishing)[1:])
            heapq.heappush(finishing, (job.submit_s + job.duration_s, index, job))
        if position < cut:
            continue
        guess = predictor.predict(
            job.user, job.project, job.image, job.gpus, job.estimate_s, burst[index]
        )
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
