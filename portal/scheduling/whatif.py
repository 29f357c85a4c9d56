"""The what-if over today's state (issue 37): `POST /api/v1/what-if/`, `allot what-if` and the
preview buttons ask :func:`preview`, which reads the state through the cycle's own snapshot
(`portal.scheduling.snapshot.load`), gives each job its predicted run time as the ETA refresh
does, and runs `scheduler.whatif` on it. It writes nothing: a preview changes no row."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from portal.core import clock as portal_clock
from portal.scheduling import eta, snapshot
from scheduler.whatif import Change, Forecast, WhatIf, what_if

NODE_ACTIONS = ("cordon", "drain", "uncordon", "remove")
PROJECT_KINDS = {"quota": "quota", "weight": "over_quota_weight", "limit": "limit"}


@dataclass(frozen=True)
class Preview:
    """The what-if's answer with the names the portal shows (a job's id, its name)."""

    result: WhatIf
    pending: dict[str, list[tuple[str, str]]]  # project -> its pending jobs (key halves)
    ids: dict[tuple[str, str], int]


def preview(changes: Iterable[Change], hours: float, now: datetime | None = None) -> Preview:
    """Today's state run forward `hours` ahead without and with `changes`. Raises ValueError
    (from `scheduler.whatif`) naming what a change refers to that the cluster lacks."""
    now = now or portal_clock.now()
    state = snapshot.load(now)
    clock = now.timestamp()
    jobs, _, _ = eta.predicted_jobs(state, clock)
    view = replace(state.snapshot(clock), jobs=tuple(jobs))
    result = what_if(view, list(changes), eta.current_policy(), horizon_s=hours * 3600.0)
    pending: dict[str, list[tuple[str, str]]] = {p.name: [] for p in view.projects}
    for job in view.jobs:
        if not job.running:
            pending.setdefault(job.project, []).append(job.key)
    return Preview(result, pending, {key: row.id for key, row in state.rows.items()})


def answer(preview: Preview) -> dict:
    """The REST body: each project's expected starts, both allocation series and the jobs the
    change stops now (see `portal.api.serializers.whatif`). With the change, a project's
    pending work includes its jobs the change stops: they queue again."""
    result = preview.result
    projects = []
    for name, keys in sorted(preview.pending.items()):
        stopped_here = [key for key in result.stopped if key[0] == name]
        projects.append({
            "project": name,
            "pending": len(keys),
            "stopped": len(stopped_here),
            "before": _starts(result.before, keys),
            "after": _starts(result.after, keys + stopped_here),
        })  # fmt: skip
    stopped = [
        {"id": preview.ids.get(key), "project": key[0], "job": key[1], "reason": reason}
        for key, reason in sorted(result.stopped.items())
    ]
    return {
        "now": _time(result.now),
        "projects": projects,
        "series": {"before": _series(result.before), "after": _series(result.after)},
        "preempted": stopped,
    }


def _starts(forecast: Forecast, keys: list[tuple[str, str]]) -> dict:
    """First and last expected start of a project's pending work; `unknown` counts the jobs the
    run cannot place within the hours asked (then `last` is None)."""
    known = [forecast.starts[k] for k in keys if forecast.starts.get(k) is not None]
    unknown = len(keys) - len(known)
    return {
        "first": _time(min(known)) if known else None,
        "last": _time(max(known)) if known and not unknown else None,
        "unknown": unknown,
    }


def _series(forecast: Forecast) -> list[dict]:
    return [{"at": _time(at), "gpus": gpus} for at, gpus in forecast.series]


def _time(clock: float) -> datetime:
    return datetime.fromtimestamp(clock, UTC)
