"""Each job's predicted run time, and each pending job's ETA (Step 7).

Every `ALLOT_ETA_INTERVAL_S` (after a cycle, so from the state the cycle just wrote):

1. a run-time predictor (`scheduler.predict`) learns the run times of the latest succeeded jobs
   (burst, user, project, image, GPUs: a burst is the jobs one user submitted together with the
   same image and GPUs, a sweep, whose first finished job predicts the rest) and counts the
   running jobs as lasting at least as long as they have run (Kaplan-Meier: in a busy cluster
   the jobs that finished are mostly the short ones), and predicts every pending and running
   job's run time, capped by the submitter's own estimate (`estimate_s`) where one was given;
   each running job also gets its outlook, the end predicted from how long it has run
   (`expected_end`, which backfill's reservations count on, B1);
2. the scheduler's own forward simulation (`scheduler.eta.estimate_starts`: the same cycles as
   production, running jobs ending at their predicted ends, no new arrivals) gives each pending
   job the time it would start;
3. the predictions and ETAs are written to the job rows (`expected_s`, `expected_basis`, `eta`),
   which the job page, the overview's pending table, the API and `allot get` show.

An ETA is advisory: None when the simulation cannot tell within `HORIZON_S` (it waits on jobs of
unknown run time, or on more than 30 days of predicted ends). It runs in a background thread and
steps a minute (or 1/50 of the predicted ends' span) at a time, so a big busy cluster costs
seconds, not minutes; `make bench-eta` measures it.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import replace
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from django.db import connection

from portal.core import clock as portal_clock
from portal.core.bulk import update_by_id
from portal.jobs.models import HOLDING, Job, Status
from portal.scheduling import snapshot
from scheduler import Policy, Snapshot
from scheduler.eta import cannot_start, estimate_starts, lower_bounds, resolution_for
from scheduler.predict import Bursts, Predictor, Running

logger = logging.getLogger(__name__)

HISTORY = 5000  # latest succeeded jobs the predictor learns from
HORIZON_S = 30 * 86400.0
PACING_KEY = "allot:eta:pacing"  # (wall-clock start of the last refresh, its cost in seconds)
RUNNING_KEY = "allot:eta:running"  # held while a refresh runs in any process
RUNNING_TTL_S = 600  # a refresh whose process died blocks others at most this long
ETA_FIELDS = ("expected_s", "expected_basis", "expected_end", "eta", "eta_kind", "eta_note")


def predictor(limit: int = HISTORY) -> tuple[Predictor, dict[tuple[str, str], str]]:
    """A predictor that has learned the `limit` latest succeeded jobs, oldest first, and the
    burst of every one of them and of every pending or running job ((project, name) -> burst)."""
    learned = Predictor()
    finished = list(
        Job.objects.filter(status=Status.SUCCEEDED, started_at__isnull=False,
                              finished_at__isnull=False)
        .order_by("-finished_at")
        .values_list("project__name", "name", "user__username", "image", "gpus", "pods",
                     "submitted_at", "started_at", "finished_at")[:limit]
    )  # fmt: skip
    current = (
        Job.objects.filter(status__in=[Status.PENDING, *HOLDING])
        .values_list("project__name", "name", "user__username", "image", "gpus", "pods",
                     "submitted_at")
    )  # fmt: skip
    bursts = burst_names([row[:7] for row in finished] + list(current))
    for project, name, user, image, gpus, pods, _, started, finished_at in reversed(finished):
        seconds = (finished_at - started).total_seconds()
        if seconds > 0:
            learned.learn(user or "", project, image, float(gpus) * pods, seconds,
                          bursts[project, name])  # fmt: skip
    return learned, bursts


def burst_names(rows) -> dict[tuple[str, str], str]:
    """(project, name) -> burst for rows of (project, name, user, image, gpus, pods,
    submitted_at), assigned in submission order (`scheduler.predict.Bursts`). Jobs that failed or
    were cancelled are not read, so a burst they sat in the middle of may split in two."""
    bursts = Bursts()
    return {
        (project, name): bursts.assign(
            user or "", project, image, float(gpus) * pods, submitted.timestamp(), name
        )
        for project, name, user, image, gpus, pods, submitted in sorted(rows, key=lambda r: r[6])
    }


def refresh(now: datetime | None = None, policy: Policy | None = None) -> int:
    """Predict and write every pending and running job's run time and every pending job's ETA;
    the number of rows written."""
    now = now or portal_clock.now()
    state = snapshot.load()
    clock = now.timestamp()
    jobs, predicted, ends = predicted_jobs(state, clock)
    view = Snapshot(nodes=state.nodes, projects=state.projects, jobs=tuple(jobs),
                    departments=state.departments, now=now.timestamp(),
                    usage=state.usage)  # fmt: skip
    eta = eta_policy(policy or current_policy())
    resolution = resolution_for(view, HORIZON_S)
    starts = estimate_starts(view, eta, horizon_s=HORIZON_S, resolution_s=resolution)
    never = {
        job.key: note
        for job in view.jobs
        if not job.running and starts.get(job.key) is None
        and (note := cannot_start(view, job)) is not None
    }  # fmt: skip
    bounds = {}
    if any(start is None and key not in never for key, start in starts.items()):
        bounds = lower_bounds(view, eta, horizon_s=HORIZON_S, resolution_s=resolution)
    ids, columns = [], {name: [] for name in ETA_FIELDS}
    for key, guess in predicted.items():
        kind, at, note = expected_start(key, starts, bounds, never, clock)
        ids.append(state.rows[key].id)
        for name, value in zip(ETA_FIELDS, (
            round(guess.seconds), guess.basis[:32], ends.get(key),
            datetime.fromtimestamp(at, UTC) if at is not None else None, kind, note[:200],
        ), strict=True):  # fmt: skip
            columns[name].append(value)
    update_by_id(Job, ids, columns)  # one statement, not bulk_update's CASE per row and field
    return len(ids)


def predicted_jobs(state: snapshot.CycleRows, clock: float) -> tuple[list, dict, dict]:
    """The state's jobs with their predicted run times and, when running, their predicted ends
    (the forward runs' input: the ETA's refresh and the what-if, portal.scheduling.whatif);
    also each job's prediction and each running job's end, by key."""
    learned, bursts = predictor()
    started = {
        job.key: state.rows[job.key].started_at.timestamp()
        for job in state.jobs
        if job.running and state.rows[job.key].started_at
    }
    ran = {key: max(clock - at, 0.0) for key, at in started.items()}
    burst = {job.key: bursts.get(job.key, "") for job in state.jobs}
    learned.running(
        Running(job.user, job.project, job.image, job.gpus * job.pods, ran[job.key], burst[job.key])
        for job in state.jobs
        if job.key in ran
    )
    jobs, predicted, ends = [], {}, {}
    for job in state.jobs:
        row = state.rows[job.key]
        shape = (job.user, job.project, job.image, job.gpus * job.pods)
        guess = learned.predict(*shape, row.estimate_s, burst[job.key])
        predicted[job.key] = guess
        if job.key in ran:
            ends[job.key] = learned.expected_end(*shape, ran[job.key], clock, row.estimate_s,
                                                 burst[job.key])  # fmt: skip
        jobs.append(replace(job, expected_s=guess.seconds, started=started.get(job.key),
                            expected_end=ends.get(job.key)))  # fmt: skip
    return jobs, predicted, ends


def expected_start(key, starts, bounds, never, now: float) -> tuple[str, float | None, str]:
    """(kind, time, note) of a job's expected start (`Job.eta_kind`): the simulation's time
    ("at"), else a reason it can never start as submitted ("never"), else the optimistic
    simulation's lower bound ("not_before"), else nothing ("": more than `HORIZON_S` of
    predicted ends ahead). Never before `now`: a start the simulation put at the clock it
    began from is due now. Running jobs have none."""
    if key not in starts:
        return "", None, ""
    if starts[key] is not None:
        return "at", max(starts[key], now), ""
    if key in never:
        return "never", None, never[key]
    if bounds.get(key) is not None:
        return "not_before", max(bounds[key], now), ""
    return "", None, ""


def eta_policy(policy: Policy) -> Policy:
    """The forward simulation allocates (and backfills) only: no reclaim, preemption or
    consolidation. Those searches are most of a cycle's cost on a busy cluster (a refresh took
    80 s instead of 10 on 800 running and 400 pending jobs), and without them a job that would
    be started by reclaiming waits for predicted ends instead: its ETA errs late, never early."""
    return replace(policy, consolidation=False, reclaim=False, preempt=False)


def current_policy() -> Policy:
    """The policy the portal's cycles use: backfill per `ALLOT_BACKFILL`; service bands per
    `ALLOT_SERVICE_BANDS` and `ALLOT_BAND_PREEMPTION`; the cluster's minimum run times before
    reclaim and preemption per `ALLOT_RECLAIM_MIN_RUNTIME` and `ALLOT_PREEMPT_MIN_RUNTIME`
    (R7.4); R2.9's k (`ALLOT_FAIRSHARE_K`) for fair share over time."""
    return Policy(
        backfill=settings.ALLOT_BACKFILL,
        k_value=settings.ALLOT_FAIRSHARE_K,
        service_bands=settings.ALLOT_SERVICE_BANDS,
        band_preemption=settings.ALLOT_BAND_PREEMPTION,
        reclaim_min_runtime_s=settings.ALLOT_RECLAIM_MIN_RUNTIME,
        preempt_min_runtime_s=settings.ALLOT_PREEMPT_MIN_RUNTIME,
    )


thread: threading.Thread | None = None  # this process's latest refresh (tests join it)


def refresh_if_due() -> bool:
    """Start `refresh` in a background thread at most every `ALLOT_ETA_INTERVAL_S` (stretched to
    five times the last refresh's cost on big clusters) and never while one runs, in any process
    (the pacing is in the cache); True when one started. An ETA is advisory: it never delays or
    stops a scheduling cycle. 0 turns ETAs off."""
    global thread
    interval = settings.ALLOT_ETA_INTERVAL_S
    if interval <= 0:
        return False
    last, cost_s = cache.get(PACING_KEY) or (float("-inf"), 0.0)
    if time.time() - last < max(interval, 5 * cost_s):
        return False
    if not cache.add(RUNNING_KEY, 1, timeout=RUNNING_TTL_S):
        return False
    cache.set(PACING_KEY, (time.time(), cost_s), timeout=None)
    thread = threading.Thread(target=_refresh_in_background, name="allot-eta", daemon=True)
    thread.start()
    return True


def _refresh_in_background() -> None:
    began, started = time.time(), time.perf_counter()
    try:
        refresh()
    except Exception:
        logger.exception("ETA refresh failed")
    finally:
        cache.set(PACING_KEY, (began, time.perf_counter() - started), timeout=None)
        cache.delete(RUNNING_KEY)
        connection.close()  # this thread's own database connection
