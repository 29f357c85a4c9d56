"""Fair share over time (R2.9, E10; issue 23): the recorded runs' GPU-hours as the core's usage.

KAI's time-based fair share (`docs/timeaware/README.md`) lowers the over-quota weight of queues
that used the cluster much in a sliding window, each moment decayed with a half-life, their
usage normalised to what the cluster could have given over the window. Here the usage comes
from the portal's own record of runs (`JobRun`: GPUs held from start to end), summed by
`scheduler.usage` in closed form. It is off by default (`ALLOT_FAIRSHARE_HALF_LIFE` unset or 0),
as in KAI without a usage database. `portal.scheduling.fairshare` says what it did to a
project's fair share.

Cost: one read of the runs overlapping the window, at most once a minute (KAI's
`fetchInterval`) per setting, kept in the cache; every other cycle reads the cache only.
Normalising to the cluster's capacity (its ready nodes' GPUs now) is per cycle and free.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.core.cache import cache

from portal.core import clock
from portal.jobs.models import JobRun
from portal.jobs.usage import Span, spans
from scheduler import Node, Project
from scheduler.usage import Interval, UsageParams, decayed_by_queue, normalise, with_departments

REFRESH_S = 60.0  # KAI's usage fetchInterval: the runs are summed again at most this often
CACHE_KEY = "allot:fairshare:usage:{half_life:g}:{window:g}"


def params() -> UsageParams:
    """The window and half-life in force (`ALLOT_FAIRSHARE_HALF_LIFE`, `ALLOT_FAIRSHARE_WINDOW`)."""
    return UsageParams(settings.ALLOT_FAIRSHARE_HALF_LIFE, settings.ALLOT_FAIRSHARE_WINDOW)


def runs_in_window(now: datetime, window_s: float, runs=None) -> list[Span]:
    """The runs (of `runs`, default all) that held GPUs inside the window, in one query through
    accounting's `portal.jobs.usage.spans`: a run keeps its project when its job is deleted, so
    GPU-hours already used still count."""
    since = now - timedelta(seconds=window_s)
    return spans(JobRun.objects.all() if runs is None else runs, since, now, now)


def interval(span: Span) -> Interval:
    """A run as the core's usage arithmetic reads it (seconds; no end while it goes on)."""
    end = None if span.running else span.end.timestamp()
    return Interval(span.project, span.milli / 1000, span.start.timestamp(), end)


def decayed_gpu_s(now: datetime, usage: UsageParams) -> dict[str, float]:
    """Each project's decayed GPU-seconds inside the window at `now`, read from the runs."""
    runs = (interval(span) for span in runs_in_window(now, usage.window_s))
    return decayed_by_queue(runs, now.timestamp(), usage)


def cached_gpu_s(now: datetime, usage: UsageParams) -> dict[str, float]:
    """`decayed_gpu_s`, summed again only when the cached sum is older than `REFRESH_S` (or
    from `now`'s future: a test's fixed clock)."""
    key = cache_key(usage)
    clock = now.timestamp()
    kept = cache.get(key)
    if kept is not None and 0 <= clock - kept[0] < REFRESH_S:
        return kept[1]
    used = decayed_gpu_s(now, usage)
    cache.set(key, (clock, used), timeout=REFRESH_S * 2)
    return used


def cache_key(usage: UsageParams) -> str:
    """Where `cached_gpu_s` keeps its sum for this window and half-life."""
    return CACHE_KEY.format(half_life=usage.half_life_s, window=usage.window_s)


def warm(now: datetime) -> None:
    """Sum the runs now if the cached sum is stale, so that the cycle's snapshot, under the
    cluster lock, only reads the cache (the sum reads every run of the window: about 0.2 s for
    8,000 runs)."""
    usage = params()
    if usage.on:
        cached_gpu_s(now, usage)


def capacity(nodes: tuple[Node, ...]) -> float:
    """The cluster's GPUs the usage is normalised to: its ready nodes' (R2.6)."""
    return float(sum(node.gpus for node in nodes if node.ready))


def usage_for(
    nodes: tuple[Node, ...],
    projects: tuple[Project, ...],
    now: datetime | None = None,
    fresh: bool = False,
) -> dict[str, float]:
    """The snapshot's `usage`: each project's and department's normalised usage (0..1 of the
    cluster over the window, R2.9, E10); empty when fair share over time is off. The cycle
    reads the sum cached for a minute; `fresh` sums the runs again (a page, not a cycle)."""
    usage = params()
    if not usage.on:
        return {}
    now = now or clock.now()
    used = decayed_gpu_s(now, usage) if fresh else cached_gpu_s(now, usage)
    normalised = normalise(used, capacity(nodes), usage)
    return with_departments(normalised, {p.name: p.department for p in projects})
