"""What the cluster did since the last cycle, as status transitions of job rows.

`reconcile` makes the agent run exactly the jobs the database says hold GPUs (the database is
the source of truth: after a crash, or in a Celery worker that has not seen a job yet, the agent is
rebuilt by starting them again; jobs deleted meanwhile are stopped). `transitions` then turns the
agent's observation into row changes: ContainerCreating -> Running, Running -> Succeeded/Failed,
and interactive jobs past their project's time limit stopped with an event saying why.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from agents.base import FINISHED, Agent, JobKey, JobStatus, Observation
from portal.jobs.models import Job, Status
from portal.scheduling.agent import SPEC_FIELDS, spec_from_values
from portal.scheduling.snapshot import ClusterState, JobRow


@dataclass(frozen=True)
class Transition:
    """A row change the agent's observation calls for; `kind` and `message` become its event."""

    job: JobKey
    new_status: str
    kind: str
    message: str

    @property
    def leaves(self) -> bool:
        """True when the job gives its GPUs back (it finished or was stopped)."""
        return self.new_status in FINISHED


def reconcile(agent: Agent, state: ClusterState) -> Observation:
    """Start on the agent every holding job it does not know, stop what the DB no longer holds."""
    seen = agent.observe()
    holding = {key: row for key, row in state.rows.items() if row.holding}
    for key in seen.jobs.keys() - holding.keys():
        agent.stop(*key)
    missing = [holding[key].id for key in holding.keys() - seen.jobs.keys()]
    for values in Job.objects.filter(id__in=missing).values(*SPEC_FIELDS):
        agent.start(spec_from_values(values))
    sessions = getattr(agent, "sessions", None)
    for session in sessions.all() if sessions is not None else ():
        if (session.project, session.name) not in holding:  # left by a process that died
            sessions.stop(session.project, session.name)
    return agent.observe() if missing or seen.jobs.keys() - holding.keys() else seen


def transitions(observation: Observation, state: ClusterState) -> list[Transition]:
    """The row changes `observation` calls for, in job order (time limits first, then phases)."""
    job_types = {job.key: job.type for job in state.jobs}
    limits = {name: info.interactive_time_limit_s for name, info in state.project_rows.items()}
    changes = []
    for key, row in state.rows.items():
        if not row.holding:
            continue
        limit = limits.get(key[0]) if job_types.get(key) == "interactive" else None
        change = _time_limit(key, row, limit, observation.at) or _phase_change(
            key, row, observation.jobs.get(key)
        )
        if change:
            changes.append(change)
    return changes


def _time_limit(key: JobKey, row: JobRow, limit: int | None, now: datetime) -> Transition | None:
    """Stop an interactive job that has run for its project's interactive time limit."""
    if limit is None or row.started_at is None:
        return None
    ran = (now - row.started_at).total_seconds()
    if ran < limit:
        return None
    message = f"stopped: {key[0]}'s interactive time limit of {limit} s reached after {ran:.0f} s"
    return Transition(key, Status.FAILED, "stopped", message)


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
