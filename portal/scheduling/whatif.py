"""The what-if over today's state (issue 37): `POST /api/v1/what-if/`, `allot what-if` and the
preview buttons ask :func:`preview`, which reads the state through the cycle's own snapshot
(`portal.scheduling.snapshot.load`), gives each job its predicted run time as the ETA refresh
does, and runs `scheduler.whatif` on it. It writes nothing: a preview changes no row."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from portal.core import clock as portal_clock
from portal.scheduling import eta, snapshot
from scheduler.model import Snapshot
from scheduler.whatif import Change, Forecast, WhatIf, what_if

NODE_ACTIONS = ("cordon", "drain", "uncordon", "remove")
PROJECT_KINDS = {"quota": "quota", "weight": "over_quota_weight", "limit": "limit"}


@dataclass(frozen=True)
class Preview:
    """The what-if's answer with the names the portal shows (a job's id, its name)."""

    result: WhatIf
    pending: dict[str, list[tuple[str, str]]]  # project -> its pending jobs (key halves)
    ids: dict[tuple[str, str], int]


REUSE_S = 30.0  # a state read this recently, unchanged since, is previewed at its clock again


@dataclass(frozen=True)
class _Read:
    """One preview's reading of the state: the rows as read (`raw`, no clock in it), when, and
    the forward runs' input made of them (`view`, predicted ends at that clock)."""

    raw: tuple
    clock: float
    view: Snapshot


_last: _Read | None = None
_last_lock = threading.Lock()


def preview(changes: Iterable[Change], hours: float, now: datetime | None = None) -> Preview:
    """Today's state run forward `hours` ahead without and with `changes`. Raises ValueError
    (from `scheduler.whatif`) naming what a change refers to that the cluster lacks.

    A preview finding the very rows the last one read, less than `REUSE_S` seconds later, runs
    from that one's clock and view (its answer's `now` says so): the "before" run is then the
    one `scheduler.whatif` kept, so an admin trying several changes pays one forward run each.
    Any change of a job, node, project, reservation or usage row is a fresh read at `now`."""
    global _last
    now = now or portal_clock.now()
    state = snapshot.load(now)
    clock = now.timestamp()
    raw = _raw(state)
    with _last_lock:
        last = _last
    if last is not None and last.raw == raw and 0 <= clock - last.clock <= REUSE_S:
        view = last.view
    else:
        jobs, _, _ = eta.predicted_jobs(state, clock)
        view = replace(state.snapshot(clock), jobs=tuple(jobs))
        with _last_lock:
            _last = _Read(raw, clock, view)
    result = what_if(view, list(changes), eta.current_policy(), horizon_s=hours * 3600.0)
    pending: dict[str, list[tuple[str, str]]] = {p.name: [] for p in view.projects}
    for job in view.jobs:
        if not job.running:
            pending.setdefault(job.project, []).append(job.key)
    return Preview(result, pending, {key: row.id for key, row in state.rows.items()})


def _raw(state: snapshot.CycleRows) -> tuple:
    """What a view is made of besides the clock: the snapshot as read and, per job, the row
    facts its prediction reads (its id, when it started, its submitter's estimate)."""
    facts = tuple((key, row.id, row.started_at, row.estimate_s) for key, row in state.rows.items())
    return (state.snapshot(0.0), facts)


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
