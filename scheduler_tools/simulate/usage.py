"""Each team's decayed usage over a sliding window, kept incrementally in virtual time.

The portal sums its recorded runs (`scheduler.usage.decayed_by_queue`); replaying a trace, the
simulator cannot afford a pass over every run in the window at each cycle, so it keeps, per team,
the decayed integral of its allocation D(t) = integral of a(s) * 0.5 ** ((t - s) / h) ds, which
advances in closed form between allocation changes, and checkpoints of it at each change inside
the window. The window's part is then D(now) - 0.5 ** (W / h) * D(now - W): the same number as
the run sum (a test checks it), in O(1) amortised per cycle and per team.
"""

from __future__ import annotations

import math
from collections import deque

from scheduler.usage import UsageParams, capacity_gpu_s


class _Team:
    """One team: its allocation now, D at the last change, and checkpoints inside the window."""

    __slots__ = ("checkpoints", "decayed", "gpus", "since")

    def __init__(self) -> None:
        self.gpus = 0.0  # allocated since `since`
        self.since = -math.inf
        self.decayed = 0.0  # D(since)
        self.checkpoints: deque[tuple[float, float, float]] = deque()  # (t, D(t), gpus after)


class UsageTracker:
    """Decayed GPU-seconds per team over the window (R2.9, E10), normalised as KAI does."""

    def __init__(self, params: UsageParams, capacity_gpus: float):
        self.params = params
        self.capacity = capacity_gpu_s(capacity_gpus, params)
        self.teams: dict[str, _Team] = {}

    def _advance(self, decayed: float, gpus: float, seconds: float) -> float:
        """D after `seconds` more at a constant `gpus`."""
        h = self.params.half_life_s
        if seconds == math.inf:
            return gpus * h / math.log(2)
        keep = math.exp2(-seconds / h)
        return decayed * keep + gpus * h / math.log(2) * (1.0 - keep)

    def change(self, team: str, t: float, delta_gpus: float) -> None:
        """The team's allocation changes by `delta_gpus` at `t` (times never go backwards)."""
        state = self.teams.setdefault(team, _Team())
        if state.since > -math.inf:
            state.decayed = self._advance(state.decayed, state.gpus, t - state.since)
        state.gpus = max(state.gpus + delta_gpus, 0.0)
        state.since = t
        state.checkpoints.append((t, state.decayed, state.gpus))

    def _decayed_at(self, state: _Team, t: float) -> float:
        """D(t) for a `t` at or after the oldest kept checkpoint's window start; drops the
        checkpoints no later query needs (queries move forward with the clock)."""
        points = state.checkpoints
        while len(points) > 1 and points[1][0] <= t:
            points.popleft()
        if not points or points[0][0] > t:
            return 0.0  # nothing allocated before t
        start, decayed, gpus = points[0]
        return self._advance(decayed, gpus, t - start)

    def decayed_gpu_s(self, team: str, now: float) -> float:
        """The team's decayed GPU-seconds inside the window at `now`."""
        state = self.teams.get(team)
        if state is None:
            return 0.0
        window, h = self.params.window_s, self.params.half_life_s
        total = self._advance(state.decayed, state.gpus, now - state.since)
        before = self._decayed_at(state, now - window)
        return max(total - math.exp2(-window / h) * before, 0.0)

    def normalised(self, now: float) -> dict[str, float]:
        """Every team's usage as a fraction of the cluster over the window (0..1)."""
        if self.capacity <= 0:
            return {}
        usage = {}
        for team in self.teams:
            used = self.decayed_gpu_s(team, now)
            if used > 0:
                usage[team] = used / self.capacity
        return usage
