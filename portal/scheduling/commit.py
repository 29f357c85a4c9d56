"""Write one cycle's outcome to the database: conditional, bulk, all or nothing.

Every job row is updated by id *and* the status the cycle read it in; if fewer rows match than
were meant to, someone else got there first (a deletion, another cycle) and `CommitConflict`
aborts the whole cycle — the caller's transaction rolls back and the next cycle plans again from
what is really there, with nothing to repair. Rows are written with `bulk_update` in batches and
events with `bulk_create`, so a cycle that starts 4,000 jobs costs a handful of statements.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db.models import Max

from agents.base import Observation
from portal.core import formats
from portal.core.bulk import update_by_id
from portal.dashboards.analytics import roll_up
from portal.dashboards.overview import IDLE_BELOW
from portal.jobs import placement
from portal.jobs.models import FINISHED, Job, JobEvent, Status, UsageSample
from portal.notify.dispatch import after_commit
from portal.notify.models import NOTIFIED
from portal.scheduling import runs
from portal.scheduling.observe import HealthNote
from portal.scheduling.snapshot import CycleRows, with_current_run
from portal.scheduling.transitions import Transition
from portal.tenancy.models import Project
from scheduler import Decision, JobKey, Plan, PodPlacement, Snapshot, apply_plan
from scheduler import Job as CoreJob

BATCH_SIZE = 2000  # rows per UPDATE statement
EVENT_KINDS = {"start": "scheduled", "evict": "evicted", "move": "moved"}


class CommitConflict(Exception):
    """A conditional update matched fewer rows than expected: the cycle must be abandoned."""


@dataclass(frozen=True)
class Update:
    """Set `values` on job row `job_id` if it is still in status `expected`."""

    job_id: int
    expected: str
    values: dict


def describe_placement(pods: Iterable[PodPlacement]) -> str:
    """'dgx1-1 GPU 0,1; dgx1-2 GPU 3 (0.63)' for event messages (a share spelled as every page
    spells GPUs, `formats.gpus`: issue 34 item 11)."""
    return "; ".join(
        f"{p.node} GPU {','.join(map(str, p.devices))}"
        + (f" ({formats.gpus(p.share)})" if p.share < 1 else "")
        for p in pods
    )


def transition_updates(state: CycleRows, changes: list[Transition], now: datetime) -> list[Update]:
    """Row updates for the agent's transitions (finished jobs give their placement back)."""
    updates = []
    for change in changes:
        row = state.rows[change.job]
        values = {"status": change.new_status}
        if change.new_status in FINISHED:
            values.update(placement=[], finished_at=now)
        updates.append(Update(row.id, row.status, values))
    return updates


def decision_updates(
    state: CycleRows, plan: Plan, current: dict[JobKey, str], now: datetime
) -> list[Update]:
    """Row updates for the plan: the last decision about a job sets it, from its current status."""
    final: dict[JobKey, Decision] = {}
    for decision in plan.decisions:
        final[decision.job] = decision
    updates = []
    jobs = {job.key: job for job in state.jobs} if final else {}
    for key, decision in final.items():
        row = state.rows[key]
        if decision.kind == "evict":
            reason = plan.pending_reasons.get(key, decision.reason)
            values = {"status": Status.PENDING, "placement": [], "started_at": None,
                      "pending_reason": reason, "backfilled": False, "expected_end": None,
                      "queued_at": now}  # its wait starts again at the eviction  # fmt: skip
        else:  # a new run: the last run's outlook (B1) no longer holds
            values = {"status": Status.CONTAINER_CREATING,
                      "placement": placement.encode(decision.placement), "started_at": now,
                      "pending_reason": "", "expected_end": None,
                      "backfilled": decision.action == "backfill"}  # B2, for B4  # fmt: skip
        if decision.kind != "start" and row.holding and row.started_at is not None:
            # the run ends here (evicted, or moved and restarted): keep what it held (L1)
            values["held_gpu_s"] = with_current_run(jobs[key], now.timestamp()).attained_gpu_s
        updates.append(Update(row.id, current[key], values))
    return updates


def reason_updates(state: CycleRows, plan: Plan, decided: set[JobKey]) -> list[Update]:
    """New pending reasons of jobs that stay pending (only those that changed are written)."""
    return [
        Update(state.rows[key].id, Status.PENDING, {"pending_reason": reason})
        for key, reason in plan.pending_reasons.items()
        if key not in decided
        and key in state.rows
        and state.rows[key].status == Status.PENDING
        and state.rows[key].pending_reason != reason
    ]


def run_updates(updates: list[Update]) -> None:
    """Apply `updates` grouped by (expected status, fields), in batches; raise on any miss."""
    groups: dict[tuple[str, tuple[str, ...]], list[Update]] = {}
    for update in updates:
        groups.setdefault((update.expected, tuple(sorted(update.values))), []).append(update)
    for (expected, fields), group in groups.items():
        for start in range(0, len(group), BATCH_SIZE):
            conditional_update(expected, fields, group[start : start + BATCH_SIZE])


def conditional_update(expected: str, fields: tuple[str, ...], updates: list[Update]) -> None:
    """UPDATE ... WHERE id IN (...) AND status = expected (one statement: `update_by_id`);
    every row must match."""
    ids = [update.job_id for update in updates]
    values = {name: [update.values[name] for update in updates] for name in fields}
    matched = update_by_id(Job, ids, values, where={"status": expected}, batch_size=len(ids))
    if matched != len(updates):
        raise CommitConflict(
            f"{len(updates) - matched} of {len(updates)} jobs were no longer {expected}; "
            "someone else got there first"
        )


def events(
    state: CycleRows, plan: Plan, changes: list[Transition], now: datetime
) -> list[JobEvent]:
    """One JobEvent per transition and per decision, with the rule's reason as the message."""
    made = [_event(state, change.job, change.kind, change.message, now) for change in changes]
    for decision in plan.decisions:
        message = decision.reason
        if decision.placement:
            message = f"{message} — on {describe_placement(decision.placement)}"
        made.append(_event(state, decision.job, EVENT_KINDS[decision.kind], message, now))
    return made


def _event(state: CycleRows, key: JobKey, kind: str, message: str, now: datetime) -> JobEvent:
    row = state.rows[key]
    return JobEvent(
        time=now, job_id=row.id, project_id=row.project_id, job_name=key[1], kind=kind,
        message=message,
    )  # fmt: skip


def write_health(state: CycleRows, notes: list[HealthNote], now: datetime) -> list[JobEvent]:
    """Warnings and Stuck flags as events; activity, idleness, warnings and the Stuck flag as job
    row fields (one UPDATE per job that changed)."""
    warnings = JobEvent.objects.bulk_create(
        [_event(state, note.job, "warning", note.warning, now) for note in notes if note.warning]
        + [_event(state, note.job, "stuck", note.stuck, now) for note in notes if note.stuck]
    )
    for note in notes:
        if note.fields:
            Job.objects.filter(id=state.rows[note.job].id).update(**dict(note.fields))
    return warnings


def write_fair_shares(state: CycleRows, plan: Plan) -> None:
    """Store each project's fair share, and its users' with user fair share (R21.4), where they
    changed (the API and the pages read them from the row)."""
    changed = [
        Project(id=info.id, fair_share=plan.fair_shares[name])
        for name, info in state.project_rows.items()
        if name in plan.fair_shares and abs(plan.fair_shares[name] - info.fair_share) > 1e-9
    ]
    if changed:
        Project.objects.bulk_update(changed, ["fair_share"])
    users = [
        Project(id=info.id, user_fair_shares=plan.user_fair_shares.get(name, {}))
        for name, info in state.project_rows.items()
        if name in plan.fair_shares and plan.user_fair_shares.get(name, {}) != info.user_fair_shares
    ]
    if users:
        Project.objects.bulk_update(users, ["user_fair_shares"])


def usage_due(now: datetime, interval_s: float) -> bool:
    """True when the newest usage sample is at least `interval_s` old (or there is none)."""
    last = UsageSample.objects.aggregate(last=Max("time"))["last"]
    return last is None or (now - last).total_seconds() >= interval_s


@dataclass
class _Tally:
    """One project's jobs after a cycle, summed for its usage sample."""

    allocated_milli: int = 0
    running: int = 0
    pending: int = 0
    busy_milli: int = 0  # GPUs whose utilization the agent reported
    weighted_utilization: float = 0.0
    idle_milli: int = 0  # GPUs of running jobs under IDLE_BELOW utilization
    cpu_millis: int = 0  # requested by the running jobs' pods (issue 26)
    memory_bytes: int = 0

    def add(self, job: CoreJob, utilization: float | None) -> None:
        if not job.running:
            self.pending += 1
            return
        milli = job.milli_total
        self.running += 1
        self.allocated_milli += milli
        self.cpu_millis += job.cpu_millis * job.pods
        self.memory_bytes += job.memory_bytes * job.pods
        if utilization is not None:
            self.busy_milli += milli
            self.weighted_utilization += utilization * milli
            if utilization < IDLE_BELOW:
                self.idle_milli += milli

    @property
    def utilization(self) -> float | None:
        """GPU-weighted mean utilization of the running jobs, None when none reported any."""
        return round(self.weighted_utilization / self.busy_milli, 3) if self.busy_milli else None


def write_usage(
    state: CycleRows,
    after: Snapshot,
    plan: Plan,
    utilization: dict[JobKey, float],
    now: datetime,
    simulated: bool,
) -> None:
    """One UsageSample per project describing the cluster after this cycle."""
    tallies = {name: _Tally() for name in state.project_rows}
    for job in after.jobs:
        tallies[job.project].add(job, utilization.get(job.key))
    quotas = {project.name: project.quota for project in state.projects}
    samples = UsageSample.objects.bulk_create(
        UsageSample(
            time=now,
            project_id=info.id,
            quota=quotas[name],
            fair_share=plan.fair_shares.get(name, info.fair_share),
            allocated_gpus=tallies[name].allocated_milli / 1000,
            running_jobs=tallies[name].running,
            pending_jobs=tallies[name].pending,
            utilization=tallies[name].utilization,
            idle_gpus=tallies[name].idle_milli / 1000,
            allocated_cpu_millis=tallies[name].cpu_millis,
            allocated_memory_bytes=tallies[name].memory_bytes,
            simulated=simulated,
        )
        for name, info in state.project_rows.items()
    )
    roll_up(samples)


def commit_cycle(
    state: CycleRows,
    snapshot: Snapshot,
    plan: Plan,
    changes: list[Transition],
    observation: Observation,
    simulated: bool,
    notes: list[HealthNote] = (),
) -> None:
    """Write transitions, the plan, the runs they open and close, events, health notes, fair
    shares and usage samples (when due).

    Call it inside the cycle's transaction: any `CommitConflict` (or other error) rolls all of it
    back together, so no job is ever left half-started.
    """
    now = observation.at
    current = {key: row.status for key, row in state.rows.items()}
    current.update((change.job, change.new_status) for change in changes)
    run_updates(transition_updates(state, changes, now))
    run_updates(decision_updates(state, plan, current, now))
    run_updates(reason_updates(state, plan, {decision.job for decision in plan.decisions}))
    runs.run_writes(state, plan, changes, now)
    written = JobEvent.objects.bulk_create(events(state, plan, changes, now))
    warnings = write_health(state, notes, now)
    after_commit([event.id for event in [*written, *warnings] if event.kind in NOTIFIED])
    write_fair_shares(state, plan)
    if usage_due(now, settings.ALLOT_USAGE_SAMPLE_INTERVAL_S):
        utilization = {
            key: status.utilization
            for key, status in observation.jobs.items()
            if status.utilization is not None
        }
        write_usage(state, apply_plan(snapshot, plan), plan, utilization, now, simulated)
