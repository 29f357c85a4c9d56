"""Minimum run time before eviction (R7.4): KAI's ``minruntime`` plugin.

Unrestrained reclaim and preemption thrash: a job that has just started is evicted before it
makes progress, starts again, and is evicted again. KAI protects a running job for a while after
it (last) started, with two durations resolved through the queue tree (KAI's design doc
``docs/developer/designs/min-runtime``, plugin ``pkg/scheduler/plugins/minruntime``):

- **reclaim min runtime** protects a job from *other projects'* reclaims (R9). The value is read
  from the queue one step below the lowest common ancestor of the reclaimer's and the victim's
  projects, on the victim's side (KAI's ``lca`` method) — the same levelled queue R9.3 compares
  — then its ancestors up to the root, then the cluster default (`Policy`). So a department's
  setting protects its projects from other departments, and a project's own setting from its
  sibling projects.
- **preempt min runtime** protects a job from *its own project's* higher-priority jobs (R10).
  The value is the victim's project's, else its department's, else the cluster default.

A value is seconds from the job's (last) start, `Job.started` on the snapshot's clock: ``None``
inherits, ``0`` (KAI's default) protects nothing, ``-1`` protects for ever. A job whose start is
unknown is not protected (as in KAI). Consolidation (R11) is not restricted: it only moves jobs
it can place again, and KAI's plugin filters reclaim and preempt victims only.

Jobs protected this way are left out of the victim queues before the eviction search (R8), as
KAI's victim filters do; when a search then fails, the pending job's reason says which jobs were
protected and when the first of them can be taken.
"""

from __future__ import annotations

import math
import re

from .model import Job, Policy
from .queues import QueueState

NEVER = -1.0  # KAI: -1 = never evictable this way
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd]?)")
_SECONDS_PER = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_min_runtime(text: str) -> float:
    """A min-runtime as people write it: "90s", "30m", "2h", "1d", plain seconds, "0" (no
    protection) or "never" / "-1"; seconds (-1 for never), ValueError otherwise."""
    value = text.strip().lower()
    if value in ("never", "-1"):
        return NEVER
    match = _DURATION.fullmatch(value)
    if match is None:
        raise ValueError(f"{text!r} is not a duration such as 90s, 30m, 2h or 1d, 0 or never")
    return float(match[1]) * _SECONDS_PER[match[2]]


def parse_duration(text: str, zero: bool = True) -> float:
    """A length of time as people write it ("90s", "30m", "12h", "1d", plain seconds), in
    seconds; ValueError for anything else, "never", a negative value, or 0 where `zero` is False
    (the fair-share half-life and window: a setting and the simulator's flags read them alike)."""
    seconds = parse_min_runtime(text)
    if seconds < 0 or (seconds == 0 and not zero):
        raise ValueError(f"{text!r} is not a duration {'of 0 or more' if zero else 'above 0'}")
    return seconds


def check_min_runtime(value: float | None, name: str) -> None:
    """A min-runtime setting: None (inherit), -1 (never evict) or seconds >= 0; ValueError
    naming the setting otherwise."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a number of seconds, -1 or unset; got {value!r}")
    if value < 0 and value != NEVER:
        raise ValueError(f"{name} must be 0 or more seconds, or -1 for never; got {value:g}")


def check_policy(policy: Policy) -> None:
    """The cluster defaults of `policy` (R7.4); ValueError naming the field otherwise."""
    if policy.reclaim_min_runtime_s is None or policy.preempt_min_runtime_s is None:
        raise ValueError("the cluster default min runtime cannot be unset (None); use 0")
    check_min_runtime(policy.reclaim_min_runtime_s, "reclaim_min_runtime_s")
    check_min_runtime(policy.preempt_min_runtime_s, "preempt_min_runtime_s")


def resolved(queue: QueueState | None, attribute: str, default: float) -> float:
    """The first value set on `queue` or its ancestors, else `default` (R7.4)."""
    while queue is not None:
        value = getattr(queue, attribute)
        if value is not None:
            return value
        queue = queue.parent
    return default


def protected_until(job: Job, min_runtime: float) -> float | None:
    """When `job` stops being protected by `min_runtime` seconds: None when it is not protected
    at all (0, or an unknown start), infinity for -1 (R7.4)."""
    if min_runtime == 0 or job.started is None:
        return None
    if min_runtime < 0:
        return math.inf
    return job.started + min_runtime


class Protection:
    """Which running jobs one cycle's reclaims and preemptions may not take yet (R7.4)."""

    def __init__(self, queues: dict[str, QueueState], policy: Policy, now: float):
        self.queues = queues
        self.now = now
        self.reclaim_default = policy.reclaim_min_runtime_s
        self.preempt_default = policy.preempt_min_runtime_s
        self.active = bool(self.reclaim_default or self.preempt_default) or any(
            q.reclaim_min_runtime_s or q.preempt_min_runtime_s for q in queues.values()
        )

    def reclaim_until(self, victim: Job, levelled_victim: QueueState) -> float | None:
        """Until when `victim` is protected from a reclaim whose levelled victim queue (R9.3)
        is `levelled_victim` (the LCA method); None when it is not."""
        value = resolved(levelled_victim, "reclaim_min_runtime_s", self.reclaim_default)
        return self._until(victim, value)

    def preempt_until(self, victim: Job) -> float | None:
        """Until when `victim` is protected from its own project's preemptors (R10); None
        when it is not."""
        value = resolved(self.queues[victim.project], "preempt_min_runtime_s", self.preempt_default)
        return self._until(victim, value)

    def _until(self, victim: Job, value: float) -> float | None:
        until = protected_until(victim, value)
        return until if until is not None and self.now < until else None


class Shielded:
    """The candidates one search left out because they were protected (for the reason)."""

    def __init__(self) -> None:
        self.count = 0
        self.projects: set[str] = set()
        self.first: float = math.inf

    def admits(self, victim: Job, until: float | None) -> bool:
        """True when `victim` is not protected (`until` is None); else note it as left out
        because it is protected until `until`, and return False."""
        if until is None:
            return True
        self.count += 1
        self.projects.add(victim.project)
        self.first = min(self.first, until)
        return False

    def reason(self, now: float, action: str) -> str | None:
        """Why the job still waits, when protection kept candidates out of its search."""
        if not self.count:
            return None
        jobs = "job" if self.count == 1 else "jobs"
        owners = ", ".join(sorted(self.projects))
        when = "never" if math.isinf(self.first) else f"in {_duration(self.first - now)}"
        return (
            f"waiting: {self.count} running {jobs} of {owners} that {action} could take "
            f"{'is' if self.count == 1 else 'are'} within the minimum run time; the first can "
            f"be taken {when} (R7.4)"
        )


def _duration(seconds: float) -> str:
    """Seconds as '45 s', '12 min' or '3 h 05 min' (rounded up: a job is never early)."""
    seconds = max(0, math.ceil(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes = math.ceil(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"
