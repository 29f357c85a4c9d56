"""Historical usage for time-based fair share (R2.9, E10): KAI's usage window and half-life decay.

KAI (`docs/timeaware/README.md`, `pkg/scheduler/cache/usagedb`) sums each queue's allocated GPUs
over a sliding window (`windowSize`, default 7 days), each moment weighted by
0.5 ** (age / `halfLifePeriod`) when a half-life is set, and normalises the sum to what the
cluster's capacity could have given over the same window, so a queue's usage `u_i` is a fraction
of the cluster (0..1): 10 GPUs over 10 hours are 100 GPU-hours, and a queue that used 24 of them
has u = 0.24. We weigh the capacity with the same decay, so a queue that held the whole cluster
for the whole window has u = 1 whatever the half-life.

Everything here is exact arithmetic on run intervals: a run of `g` GPUs from `start` to `end`
contributes g * integral of 0.5 ** ((now - t) / h) dt over the part of [start, end] inside
[now - window, now], in closed form. Times are seconds on any one clock; the core never reads
the clock, the caller passes `now`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

DEFAULT_WINDOW_S = 7 * 86400.0  # KAI's default windowSize


@dataclass(frozen=True)
class UsageParams:
    """The window and half-life of time-based fair share, in seconds (R2.9, E10).

    `half_life_s` 0 means off: no usage is fed to the scheduler (KAI's default, no usage DB)."""

    half_life_s: float = 0.0
    window_s: float = DEFAULT_WINDOW_S

    def __post_init__(self) -> None:
        if not (self.half_life_s >= 0 and math.isfinite(self.half_life_s)):
            raise ValueError(
                f"half-life must be a finite number of seconds >= 0, not {self.half_life_s!r}"
            )
        if not (self.window_s > 0 and math.isfinite(self.window_s)):
            raise ValueError(
                f"window must be a finite number of seconds > 0, not {self.window_s!r}"
            )

    @property
    def on(self) -> bool:
        """True when usage over time counts (a half-life is set)."""
        return self.half_life_s > 0


def _decayed_integral(age_from: float, age_to: float, half_life_s: float) -> float:
    """Integral of 0.5 ** (age / h) for age from `age_to` (recent) to `age_from` (older)."""
    scale = half_life_s / math.log(2)
    return scale * (math.exp2(-age_to / half_life_s) - math.exp2(-age_from / half_life_s))


def decayed_gpu_s(
    gpus: float, start: float, end: float | None, now: float, params: UsageParams
) -> float:
    """GPU-seconds a run of `gpus` GPUs held from `start` to `end` (None: still running) counts
    at `now`: only its part inside the window, each second weighted by its decay (R2.9, E10)."""
    if not params.on:
        return 0.0
    begin = max(start, now - params.window_s)
    finish = now if end is None else min(end, now)
    if finish <= begin or gpus <= 0:
        return 0.0
    return gpus * _decayed_integral(now - begin, now - finish, params.half_life_s)


def capacity_gpu_s(capacity_gpus: float, params: UsageParams) -> float:
    """What `capacity_gpus` GPUs held all through the window count, decayed alike: the
    denominator of the normalised usage."""
    if not params.on or capacity_gpus <= 0:
        return 0.0
    return capacity_gpus * _decayed_integral(params.window_s, 0.0, params.half_life_s)


def normalise(
    used_gpu_s: Mapping[str, float], capacity_gpus: float, params: UsageParams
) -> dict[str, float]:
    """Each queue's decayed GPU-seconds as a fraction of the cluster's decayed capacity over
    the window (KAI's normalisation); empty when off or the cluster has no GPUs."""
    capacity = capacity_gpu_s(capacity_gpus, params)
    if capacity <= 0:
        return {}
    return {name: used / capacity for name, used in used_gpu_s.items() if used > 0}


def with_departments(
    usage: Mapping[str, float], department_of: Mapping[str, str | None]
) -> dict[str, float]:
    """Project usage plus each department's, the sum of its projects' (KAI's queue controller
    adds children's usage up to the parent queue): R2.11 divides among departments first."""
    total = dict(usage)
    for project, value in usage.items():
        department = department_of.get(project)
        if department:
            total[department] = total.get(department, 0.0) + value
    return total


@dataclass(frozen=True)
class Interval:
    """A run as plain data: `gpus` held by `queue` from `start` to `end` (None: still running)."""

    queue: str
    gpus: float
    start: float
    end: float | None


def decayed_by_queue(runs: Iterable[Interval], now: float, params: UsageParams) -> dict[str, float]:
    """Decayed GPU-seconds per queue over the window at `now` (R2.9, E10)."""
    totals: dict[str, float] = {}
    for run in runs:
        used = decayed_gpu_s(run.gpus, run.start, run.end, now, params)
        if used:
            totals[run.queue] = totals.get(run.queue, 0.0) + used
    return totals
