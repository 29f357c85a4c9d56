"""What a submission would do to running jobs, before it is made (issue 34 item 2: launching a
notebook of 2 GPUs in team-a preempted a teammate's training job without a word).

A dry run of the scheduling core: the state a cycle would read (`portal.scheduling.snapshot`),
the job added as the newest pending one, and `scheduler.plan_cycle`, which is pure, decides the
next cycle. The jobs it evicts or moves to make room for this one are what the submission would
cost; nothing is written. It is the next cycle's plan on today's state: jobs that end or arrive
before the real cycle can change it, which the forms and the API say.

Read without the cycle's lock (a preview may be a cycle old); the texts are redacted for the
reader as every scheduler text is (`access.texts_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from portal import access
from portal.core import clock
from portal.core.errors import conflict
from portal.jobs.models import Job, JobType
from portal.scheduling import snapshot
from portal.scheduling.eta import current_policy
from scheduler import Job as QueuedJob
from scheduler import plan_cycle
from scheduler.session import gpus as gpus_text


@dataclass(frozen=True)
class Disruption:
    """A running job the submission would stop (`evict`: back to Pending) or restart elsewhere
    (`move`), with the scheduler's reason; `job` is "project/name" or "another project's job"."""

    job: str
    user: str
    milli_gpus: int  # thousandths of a GPU, as the scheduler counts them
    action: str
    reason: str

    @property
    def gpus(self) -> float:
        return self.milli_gpus / 1000

    def as_text(self) -> str:
        """One line for a page: "team-a/a-job4 (bob, 2 GPUs): preempted: ... (R10.2)"."""
        return f"{self.job} ({self.user}, {gpus_text(self.milli_gpus)}): {self.reason}"


@dataclass(frozen=True)
class Preview:
    """The next cycle for the job: does it start, whom it stops, and why it would wait."""

    starts: bool
    disruptions: tuple[Disruption, ...]
    waits: str  # the pending reason when it does not start; "" when it does

    def as_data(self) -> dict:
        """The REST answer's body (`POST /api/v1/jobs/?dry_run=true`)."""
        return {
            "dry_run": True,
            "would_start": self.starts,
            "would_preempt": [
                {"job": d.job, "user": d.user, "gpus": d.gpus, "action": d.action,
                 "reason": d.reason}
                for d in self.disruptions
            ],
            "pending_reason": self.waits,
        }  # fmt: skip


def preview(user, fields: dict) -> Preview:
    """The next cycle's plan if `user` submitted the job of `fields` (validated by
    `JobSerializer`: project, name, gpus, resolved CPU and memory) now. A name already taken is
    the 409 a submission would get."""
    project = fields["project"]
    if Job.objects.filter(project=project, name=fields["name"]).exists():
        raise conflict("name", f"a job named {fields['name']!r} already exists in {project.name}")
    policy = current_policy()
    now = clock.now()
    state = snapshot.load(now)
    view = state.snapshot(now.timestamp(), service=bool(policy.service_bands))
    job = QueuedJob(
        project.name, fields["name"], float(fields["gpus"]), fields.get("pods", 1),
        fields.get("type", JobType.TRAIN), fields.get("priority"),
        order=max((queued.order for queued in view.jobs), default=0) + 1,
        user=user.get_username(), image=fields.get("image", ""),
        cpu_millis=fields.get("cpu_millis") or 0, memory_bytes=fields.get("memory_bytes") or 0,
        gpu_memory_bytes=fields.get("gpu_memory_bytes"),
        topology_required=(fields.get("topology") or {}).get("required"),
        topology_preferred=(fields.get("topology") or {}).get("preferred"),
    )  # fmt: skip
    if project.name not in {queue.name for queue in view.projects}:
        return Preview(False, (), "its project is new: the next cycle sees it")
    plan = plan_cycle(replace(view, jobs=(*view.jobs, job)), policy)
    redact = access.texts_for(user)
    running = {queued.key: queued for queued in view.jobs}
    disruptions = tuple(
        Disruption(redact("/".join(d.job)), running[d.job].user or "someone",
                   running[d.job].milli_total, d.kind, redact(d.reason))
        for d in plan.decisions
        if d.kind in ("evict", "move") and d.beneficiary == job.key and d.job in running
    )  # fmt: skip
    starts = any(d.job == job.key and d.kind != "evict" for d in plan.decisions)
    waits = "" if starts else redact(plan.pending_reasons.get(job.key, ""))
    return Preview(starts, disruptions, waits)
