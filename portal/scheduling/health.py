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
POLICY_FIELDS = (
    "interactive_time_limit_s", "training_max_runtime_s", "interactive_idle_timeout_s",
    "train_idle_timeout_s", "idle_threshold", "timeout_warning_s", "timeout_extension_s",
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

    @property
    def active(self) -> bool:
        """True when any policy can end a job."""
        return any(
            value is not None
            for value in (self.interactive_time_limit_s, self.training_max_runtime_s,
                          self.interactive_idle_timeout_s, self.train_idle_timeout_s)
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


@dataclass(frozen=True)
class Verdict:
    """What one job's health calls for now: end it, warn its owner, or track its idleness."""

    timed_out: str = ""  # the event message when the job must end now
    warning: str = ""  # a warning message to record (once per policy)
    warned_for: str | None = None  # the new value of the job's `warned_for`, when it changes
    idle_since: datetime | None = None
    idle_changed: bool = False


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
    current = JobHealth(job.type, job.started_at, idle_since, job.warned_for, job.extended_s)
    for name, deadline, what in deadlines(current, policy):
        if now >= deadline:
            return Verdict(timed_out=_ended(name, what, current, utilization, now),
                           idle_since=idle_since, idle_changed=idle_changed)  # fmt: skip
    for name, deadline, what in deadlines(current, policy):
        if now >= deadline - timedelta(seconds=policy.timeout_warning_s):
            if job.warned_for == name:
                break
            left = (deadline - now).total_seconds()
            extend = (f"; extend once by {policy.timeout_extension_s} s"
                      if policy.timeout_extension_s and not job.extended_s else "")  # fmt: skip
            message = f"warning: the {what} ends this job in {left:.0f} s{extend}"
            return Verdict(warning=message, warned_for=name, idle_since=idle_since,
                           idle_changed=idle_changed)  # fmt: skip
    return Verdict(idle_since=idle_since, idle_changed=idle_changed)


def _ended(name: str, what: str, job: JobHealth, utilization, now: datetime) -> str:
    if name == "idle GPU timeout":
        idle_s = (now - job.idle_since).total_seconds()
        figure = f"GPUs idle for {idle_s:.0f} s, utilization now {utilization:.1%}"
    else:
        ran = (now - job.started_at).total_seconds()
        figure = f"ran {ran:.0f} s"
    extended = f", extended by {job.extended_s} s" if job.extended_s else ""
    return f"timed out: {what}{extended} reached ({figure})"
