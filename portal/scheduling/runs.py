"""Runs: every start of a job opens one, its end closes it (`portal.jobs.models.JobRun`).

`run_writes` is part of the cycle's commit (same transaction, so a run is open exactly while the
job row holds GPUs); `keep_logs` runs after the commit, before the cluster is told to stop a
run's pods, because the logs live in those pods and a network call never runs under the lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db.models import Max
from django.utils import timezone

from agents.base import Agent, JobKey
from portal.jobs import placement
from portal.jobs.models import JobRun, RunEnd, Status
from portal.scheduling.agent import job_spec, placement_specs
from portal.scheduling.transitions import Transition
from scheduler import Decision, Plan

if TYPE_CHECKING:  # observe calls keep_logs: these are for the annotations only
    from portal.scheduling.snapshot import CycleRows

ENDS = {Status.SUCCEEDED: RunEnd.COMPLETED, Status.FAILED: RunEnd.FAILED,
        Status.TIMED_OUT: RunEnd.TIMED_OUT}  # fmt: skip
ENDED_BY = {Status.SUCCEEDED: "", Status.FAILED: "the cluster",
            Status.TIMED_OUT: "the project's policy"}  # fmt: skip
LOG_CHARS_MAX = 200_000  # a run's kept log, at most (its last lines)


def ended_by(decision: Decision) -> str:
    """Who ended a run: "team-a's reclaim", "team-b's preempt", "consolidation", "a failed GPU"."""
    if decision.action == "device-failure":
        return "a failed GPU"
    if decision.beneficiary is not None:
        return f"{decision.beneficiary[0]}'s {decision.action}"
    return decision.action


def run_writes(
    state: CycleRows, plan: Plan, changes: list[Transition], now: datetime
) -> list[JobKey]:
    """Close the runs that end in this cycle and open those that start; the keys of the jobs
    whose run ended (their logs are kept after the commit, `keep_logs`)."""
    closing: dict[JobKey, tuple[str, str, str]] = {}
    for change in changes:
        if change.leaves:
            closing[change.job] = (ENDS[change.new_status], ENDED_BY[change.new_status],
                                   change.message)  # fmt: skip
    by_job: dict[JobKey, list[Decision]] = {}
    for decision in plan.decisions:
        by_job.setdefault(decision.job, []).append(decision)
    opening = []
    for key, decisions in by_job.items():
        last, evicting = decisions[-1], [d for d in decisions if d.kind == "evict"]
        if state.rows[key].holding and (evicting or last.kind == "move"):
            cause = evicting[0] if evicting else last
            end = RunEnd.EVICTED if evicting else RunEnd.MOVED
            closing[key] = (end, ended_by(cause), cause.reason)
        if last.kind != "evict":
            opening.append(last)
    _close(state, closing, now)
    _open(state, opening, now)
    return list(closing)


def first_starts(started_ids: Iterable[int], at: datetime) -> list[tuple[str, float]]:
    """(project, seconds from submission) of each of the jobs `started_ids` whose first run a
    cycle opened at `at`: its submit-to-start latency, for the metrics."""
    ids = list(started_ids)
    if not ids:
        return []
    first = JobRun.objects.filter(job_id__in=ids, number=1, started_at=at)
    return [
        (project, max((started - submitted).total_seconds(), 0.0))
        for project, started, submitted in first.values_list(
            "project__name", "started_at", "job__submitted_at"
        )
    ]


def _close(state: CycleRows, closing: dict[JobKey, tuple[str, str, str]], now: datetime) -> None:
    ids = {state.rows[key].id: how for key, how in closing.items()}
    runs = list(JobRun.objects.filter(job_id__in=ids, ended_at__isnull=True))
    for run in runs:
        run.ended_at = now
        run.end, run.ended_by, run.reason = ids[run.job_id]
    JobRun.objects.bulk_update(runs, ["ended_at", "end", "ended_by", "reason"], batch_size=500)


def _open(state: CycleRows, starts: list[Decision], now: datetime) -> None:
    if not starts:
        return
    jobs = {job.key: job for job in state.jobs}
    rows = [state.rows[decision.job] for decision in starts]
    ids = [row.id for row in rows]
    last = dict(
        JobRun.objects.filter(job_id__in=ids)
        .values("job_id")
        .annotate(last=Max("number"))
        .values_list("job_id", "last")
    )
    JobRun.objects.bulk_create(
        JobRun(job_id=row.id, project_id=row.project_id, job_name=row.name, user_id=row.user_id,
               job_type=row.type, number=last.get(row.id, 0) + 1, started_at=now,
               placement=placement.encode(decision.placement),
               gpus=jobs[decision.job].milli_total / 1000,
               cpu_millis=jobs[decision.job].cpu_millis * jobs[decision.job].pods,
               memory_bytes=jobs[decision.job].memory_bytes * jobs[decision.job].pods)
        for row, decision in zip(rows, starts, strict=True)
    )  # fmt: skip


def keep_logs(agent: Agent, keys: Iterable[JobKey]) -> None:
    """Store the last lines of each job's latest ended run whose logs were not kept yet, read
    from the cluster before its pods are stopped (call it with no transaction open).

    Each read is a round trip to the cluster (0.2-0.6 s on the loaded lab): one after another,
    the victims of a reclaim kept the worker here for minutes (issue 39), so a real cluster's
    are read as many at a time as it carries jobs out (`ALLOT_K8S_CONCURRENCY`, the connections
    its client keeps), and the runs written in one statement."""
    keys = set(keys)
    if not keys:
        return
    runs = (
        JobRun.objects.filter(job__name__in={name for _, name in keys}, ended_at__isnull=False,
                              logs_kept_at__isnull=True)
        .select_related("job__project", "job__user")
        .order_by("job_id", "-number")
    )  # fmt: skip
    latest, seen = [], set()
    for run in runs:
        if run.job_id in seen or (run.job.project.name, run.job.name) not in keys:
            continue
        seen.add(run.job_id)
        latest.append(run)
    specs = [replace(job_spec(run.job), placement=placement_specs(run.placement),
                     started_at=run.started_at) for run in latest]  # fmt: skip
    texts = _read_logs(agent, specs)
    kept_at = timezone.now()
    for run, lines in zip(latest, texts, strict=True):
        run.logs = "\n".join(lines)[-LOG_CHARS_MAX:]
        run.logs_kept_at = kept_at
    JobRun.objects.bulk_update(latest, ["logs", "logs_kept_at"], batch_size=500)


def _read_logs(agent: Agent, specs: list) -> list[list[str]]:
    """The last lines of each job's log, in order: concurrently from a real cluster; one after
    another from the simulated one (in process, nothing to wait for)."""
    lines = settings.ALLOT_RUN_LOG_LINES
    if agent.simulated or len(specs) <= 1:
        return [agent.logs(spec, lines) for spec in specs]
    readers = min(settings.ALLOT_K8S_CONCURRENCY, len(specs))
    with ThreadPoolExecutor(readers, "allot-keep-logs") as pool:
        return list(pool.map(lambda spec: agent.logs(spec, lines), specs))
