"""What the cluster did since the last cycle, as status transitions of job rows.

`reconcile` makes the agent run exactly the jobs the database says hold GPUs (the database is
the source of truth: after a crash, or in a Celery worker that has not seen a job yet, the agent is
rebuilt by starting them again; jobs deleted meanwhile are stopped). `transitions` then turns the
agent's observation into row changes: ContainerCreating -> Running, Running -> Succeeded/Failed,
and jobs a project health policy ends (time limits, idle GPUs, `health.py`) -> TimedOut.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.base import Agent, JobKey, JobStatus, Observation
from portal.jobs import health
from portal.jobs.health import JobHealth
from portal.jobs.models import HOLDING, Job, Status
from portal.scheduling import external, runs
from portal.scheduling.agent import SPEC_FIELDS, spec_from_values
from portal.scheduling.snapshot import CycleRows, JobRow
from portal.scheduling.transitions import Transition


def reconcile(agent: Agent) -> Observation:
    """Start on the agent every holding job it does not know, stop what the DB no longer holds.

    Called with no lock and no transaction open: every call here may cross the network. The
    cluster is observed *before* the rows are read, so a job the agent runs that a concurrent
    cycle has just started is already holding in the rows (never stopped by mistake); a start
    this reads too early is repeated, harmlessly, by the next cycle."""
    seen = agent.observe()
    external.sync(seen)  # rows for workloads other tools made (issue 33), before reading them
    rows = Job.objects.filter(status__in=HOLDING).values_list("project__name", "name", "id")
    holding = {(project, name): job_id for project, name, job_id in rows}
    missing = [holding[key] for key in holding.keys() - seen.jobs.keys()]
    starts = [spec_from_values(values) for values in
              Job.objects.filter(id__in=missing).values(*SPEC_FIELDS)]  # fmt: skip
    gone = seen.jobs.keys() - holding.keys()  # stopped by their owner, deleted, or ended
    runs.keep_logs(agent, gone)  # a stopped job's last run: its pods are still there
    agent.carry_out(sorted(gone), starts)
    sessions = agent.sessions
    for session in sessions.all() if sessions is not None else ():
        if (session.project, session.name) not in holding:  # left by a process that died
            sessions.stop(session.project, session.name)
    return agent.observe() if missing or gone else seen


@dataclass(frozen=True)
class HealthNote:
    """A job's health bookkeeping for the commit: a warning event and/or row fields to set."""

    job: JobKey
    warning: str = ""
    fields: tuple[tuple[str, object], ...] = ()
    stuck: str = ""  # the event that flags the job Stuck


def transitions(
    observation: Observation, state: CycleRows
) -> tuple[list[Transition], list[HealthNote]]:
    """The row changes `observation` calls for, in job order: a job a health policy ends
    (TimedOut), else the agent's phase changes; and the health notes (warnings, idleness)."""
    changes, notes = [], []
    for key, row in state.rows.items():
        if not row.holding:
            continue
        seen = _of_this_run(observation.jobs.get(key), row)
        info = state.project_rows.get(key[0])
        verdict = None
        if info is not None and info.health.active:
            utilization = seen.utilization if seen is not None else None
            active_at, moved = _activity(row, seen, observation.at)
            job = JobHealth(row.type, row.started_at, row.idle_since, row.warned_for,
                            row.extended_s, active_at, row.stuck,
                            seen.restarts if seen is not None else 0)  # fmt: skip
            verdict = health.judge(job, info.health, utilization, observation.at)
            note = _note(key, verdict, moved)
            if note is not None:
                notes.append(note)
        if verdict is not None and verdict.timed_out:
            changes.append(Transition(key, Status.TIMED_OUT, "timed out", verdict.timed_out))
            continue
        change = _phase_change(key, row, seen)
        if change:
            changes.append(change)
    return changes, notes


def _of_this_run(seen: JobStatus | None, row: JobRow) -> JobStatus | None:
    """What the agent saw of the row's current run; None when it saw an earlier run (the cluster
    was observed before a concurrent cycle evicted or moved the job and started it again)."""
    if seen is None or seen.started_at is None or row.started_at is None:
        return seen
    return seen if seen.started_at == row.started_at else None


def _activity(row: JobRow, seen: JobStatus | None, now) -> tuple[object, tuple]:
    """(when the job's output last changed, the row fields to store when it changed now).

    An agent that does not measure activity (the Kubernetes agent reports none) leaves it
    unknown, so silence never makes such a job Stuck; its restarts still do."""
    if seen is None:
        return row.active_at or row.started_at, ()
    if seen.activity is None:
        return row.active_at, ()
    if seen.activity != row.activity or row.active_at is None:
        return now, (("activity", seen.activity[:64]), ("active_at", now))
    return row.active_at, ()


def _note(key: JobKey, verdict, moved: tuple = ()) -> HealthNote | None:
    fields = list(moved)
    if verdict.idle_changed:
        fields.append(("idle_since", verdict.idle_since))
    if verdict.warned_for is not None:
        fields.append(("warned_for", verdict.warned_for))
    if verdict.stuck is not None:
        fields.append(("stuck", verdict.stuck))
    if not fields and not verdict.warning and not verdict.stuck_message:
        return None
    return HealthNote(key, verdict.warning, tuple(fields), verdict.stuck_message)


def _phase_change(key: JobKey, row: JobRow, seen: JobStatus | None) -> Transition | None:
    """Follow the agent forward only: a phase it reports that is later than the row's."""
    if seen is None or seen.phase == row.status or seen.phase == "ContainerCreating":
        return None
    nodes = ", ".join(dict.fromkeys(pod.node for pod in seen.pods))
    if seen.phase == "Running":
        return Transition(key, Status.RUNNING, "running", f"running on {nodes}")
    if seen.phase == "Succeeded":
        return Transition(key, Status.SUCCEEDED, "succeeded", "completed successfully")
    detail = f": {seen.message}" if seen.message else ""
    return Transition(key, Status.FAILED, "failed", f"failed on {nodes}{detail}")
