"""Job health: the project policies that end jobs holding GPUs for too long or for nothing.

Three policies, each read from the project and, where the project leaves it unset, from its
department (`resolve`):

- **interactive time limit**: an interactive job runs at most this long;
- **training maximum run time**: a training job runs at most this long;
- **idle-GPU timeout** (one per job type): a job whose GPUs all stay under the idle threshold
  (default 1 %) for this long. Idleness is measured from the agent's utilization; a job whose
  utilization is unknown is never called idle.

A job past a deadline ends with the status TimedOut and an event naming the policy and the
measured figures, in the same cycle that sees it, so its GPUs go to the next job at once. The
warning window (default 15 min) before a deadline gives the owner one warning, and a project
that sets an extension lets the owner push every deadline back once (`extend`).

Everything here is arithmetic on plain values; the cycle supplies the rows, the observation and
the clock (tests freeze it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

DEFAULT_IDLE_THRESHOLD = 0.01
DEFAULT_WARNING_S = 900
STUCK_RESTARTS = 3  # pods restarted this often (crash loop, repeated OOM): stuck at once
POLICY_FIELDS = (
    "interactive_time_limit_s", "training_max_runtime_s", "interactive_idle_timeout_s",
    "train_idle_timeout_s", "idle_threshold", "timeout_warning_s", "timeout_extension_s",
    "stuck_after_s", "stuck_stop_after_s",
)  # fmt: skip


@dataclass(frozen=True)
class HealthPolicy:
    """A project's effective policies (None: off)."""

    interactive_time_limit_s: int | None = None
    training_max_runtime_s: int | None = None
    interactive_idle_timeout_s: int | None = None
    train_idle_timeout_s: int | None = None
    idle_threshold: float = DEFAULT_IDLE_THRESHOLD
    timeout_warning_s: int = DEFAULT_WARNING_S
    timeout_extension_s: int | None = None
    stuck_after_s: int | None = None  # a training job without new output this long is Stuck
    stuck_stop_after_s: int | None = None  # ... and is stopped this long after (None: never)

    @property
    def active(self) -> bool:
        """True when any policy can end or flag a job."""
        return any(
            value is not None
            for value in (self.interactive_time_limit_s, self.training_max_runtime_s,
                          self.interactive_idle_timeout_s, self.train_idle_timeout_s,
                          self.stuck_after_s)
        )  # fmt: skip


def resolve(project: dict, department: dict | None) -> HealthPolicy:
    """The project's value of each policy, else its department's, else the default."""
    values = {}
    for field in POLICY_FIELDS:
        value = project.get(field)
        if value is None and department is not None:
            value = department.get(field)
        if value is not None:
            values[field] = value
    return HealthPolicy(**values)


@dataclass(frozen=True)
class JobHealth:
    """What the policies need of one job holding GPUs."""

    type: str
    started_at: datetime | None
    idle_since: datetime | None
    warned_for: str
    extended_s: int
    active_at: datetime | None = None  # when its output or progress last changed
    stuck: bool = False
    restarts: int = 0


@dataclass(frozen=True)
class Verdict:
    """What one job's health calls for now: end it, warn its owner, or track its idleness."""

    timed_out: str = ""  # the event message when the job must end now
    warning: str = ""  # a warning message to record (once per policy)
    warned_for: str | None = None  # the new value of the job's `warned_for`, when it changes
    idle_since: datetime | None = None
    idle_changed: bool = False
    stuck: bool | None = None  # the job's new Stuck flag, when it changes
    stuck_message: str = ""  # the event that flags it


def stuck_for(job: JobHealth, policy: HealthPolicy, now: datetime) -> str:
    """Why a training job counts as stuck now ("" when it does not)."""
    if job.type == "interactive" or policy.stuck_after_s is None:
        return ""
    if job.restarts >= STUCK_RESTARTS:
        return f"its pods restarted {job.restarts} times (crash loop or out of memory)"
    if job.active_at is not None:
        silent = (now - job.active_at).total_seconds()
        if silent >= policy.stuck_after_s:
            return f"no new output or progress for {silent:.0f} s"
    return ""


def deadlines(job: JobHealth, policy: HealthPolicy) -> list[tuple[str, datetime, str]]:
    """(policy name, when it ends the job, what it measures) for every policy that applies."""
    found = []
    extra = timedelta(seconds=job.extended_s)
    if job.started_at is not None:
        limit = (policy.interactive_time_limit_s if job.type == "interactive"
                 else policy.training_max_runtime_s)  # fmt: skip
        if limit is not None:
            name = "interactive time limit" if job.type == "interactive" else "maximum run time"
            found.append((name, job.started_at + timedelta(seconds=limit) + extra,
                          f"{name} of {limit} s"))  # fmt: skip
    idle = (policy.interactive_idle_timeout_s if job.type == "interactive"
            else policy.train_idle_timeout_s)  # fmt: skip
    if idle is not None and job.idle_since is not None:
        found.append(("idle GPU timeout", job.idle_since + timedelta(seconds=idle) + extra,
                      f"idle GPU timeout of {idle} s (under {policy.idle_threshold:.0%} "
                      "utilization)"))  # fmt: skip
    if (job.type != "interactive" and policy.stuck_after_s is not None
            and policy.stuck_stop_after_s is not None and job.active_at is not None):  # fmt: skip
        grace = policy.stuck_after_s + policy.stuck_stop_after_s
        found.append(("stuck job", job.active_at + timedelta(seconds=grace) + extra,
                      f"stuck-job stop after {grace} s without output or progress"))  # fmt: skip
    return sorted(found, key=lambda item: item[1])


def judge(
    job: JobHealth, policy: HealthPolicy, utilization: float | None, now: datetime
) -> Verdict:
    """The verdict on one job holding GPUs at `now`, given its GPUs' utilization (0..1)."""
    idle_since, idle_changed = job.idle_since, False
    idle = utilization is not None and utilization < policy.idle_threshold
    if idle and idle_since is None:
        idle_since, idle_changed = now, True
    elif not idle and idle_since is not None:
        idle_since, idle_changed = None, True
    current = JobHealth(job.type, job.started_at, idle_since, job.warned_for, job.extended_s,
                        job.active_at, job.stuck, job.restarts)  # fmt: skip
    flags = _stuck_flag(current, policy, now)
    for name, deadline, what in deadlines(current, policy):
        if now >= deadline:
            return Verdict(timed_out=_ended(name, what, current, utilization, now),
                           idle_since=idle_since, idle_changed=idle_changed, **flags)  # fmt: skip
    for name, deadline, what in deadlines(current, policy):
        if now >= deadline - timedelta(seconds=policy.timeout_warning_s):
            if job.warned_for == name:
                break
            left = (deadline - now).total_seconds()
            extend = (f"; extend once by {policy.timeout_extension_s} s"
                      if policy.timeout_extension_s and not job.extended_s else "")  # fmt: skip
            message = f"warning: the {what} ends this job in {left:.0f} s{extend}"
            return Verdict(warning=message, warned_for=name, idle_since=idle_since,
                           idle_changed=idle_changed, **flags)  # fmt: skip
    return Verdict(idle_since=idle_since, idle_changed=idle_changed, **flags)


def _stuck_flag(job: JobHealth, policy: HealthPolicy, now: datetime) -> dict:
    """Raise the Stuck flag (with its event) when the job became stuck, lower it when not."""
    why = stuck_for(job, policy, now)
    if why and not job.stuck:
        stop = (f"; it is stopped {policy.stuck_stop_after_s} s later unless it moves"
                if policy.stuck_stop_after_s is not None else "")  # fmt: skip
        return {"stuck": True, "stuck_message": f"stuck: {why}{stop}"}
    if not why and job.stuck:
        return {"stuck": False}
    return {}


def _ended(name: str, what: str, job: JobHealth, utilization, now: datetime) -> str:
    if name == "stuck job":
        figure = f"no output or progress for {(now - job.active_at).total_seconds():.0f} s"
    elif name == "idle GPU timeout":
        idle_s = (now - job.idle_since).total_seconds()
        figure = f"GPUs idle for {idle_s:.0f} s, utilization now {utilization:.1%}"
    else:
        ran = (now - job.started_at).total_seconds()
        figure = f"ran {ran:.0f} s"
    extended = f", extended by {job.extended_s} s" if job.extended_s else ""
    return f"timed out: {what}{extended} reached ({figure})"
