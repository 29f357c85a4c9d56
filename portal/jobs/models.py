"""Jobs, what happened to them (JobEvent) and each project's usage over time (UsageSample)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

from django.conf import settings
from django.db import models

from portal.core.validators import NAME_MAX, validate_dns_label
from portal.jobs import eta_text
from portal.jobs.placement import Pod, decode
from portal.tenancy.models import Project


class Status(models.TextChoices):
    """A job's lifecycle. ContainerCreating and Running hold GPUs; the others do not.

    Stopped is the owner's stop (Run:AI's `runai suspend`, Slurm's `scontrol hold` of a running
    job): the run ends and the GPUs are free, the job keeps its spec, events, runs and name, and
    the scheduler never plans it again until it is resumed (back to Pending) or deleted.
    """

    PENDING = "Pending"
    CONTAINER_CREATING = "ContainerCreating"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TIMED_OUT = "TimedOut"  # ended by a project policy (time limit, run time, idle GPUs)
    STOPPED = "Stopped"  # ended by its owner; resumable


HOLDING = (Status.CONTAINER_CREATING, Status.RUNNING)  # statuses with a placement
FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.TIMED_OUT)  # ended by the cluster or policy
ACTIVE = (Status.PENDING, *HOLDING)  # what the scheduler plans
ENDED = (*FINISHED, Status.STOPPED)  # history: nothing runs, the row stays until deleted


class JobType(models.TextChoices):
    """`train` is preemptible and may go over quota; `interactive` stays within quota (R7, §13)."""

    TRAIN = "train"
    INTERACTIVE = "interactive"


class ServiceType(models.TextChoices):
    """How a job's ports are exposed (Run:AI's --service-type); blank = not exposed."""

    NONE = "", "none"
    PORTFORWARD = "portforward"
    NODEPORT = "nodeport"
    LOADBALANCER = "loadbalancer"
    INGRESS = "ingress"


class Job(models.Model):
    """`pods` pods of `gpus` GPUs each (a fraction 0.01..0.99 or a whole number of devices; 0 for
    a CPU-only job), each asking `cpu_millis` CPU and `memory_bytes` memory.

    `placement` is one entry per pod, `{"node": name, "devices": [index, ...], "share": float}`,
    while the job holds GPUs (ContainerCreating, Running) and `[]` otherwise; the scheduling cycle
    writes it together with `status` in one conditional update. The id is the submission order
    (an evicted job keeps it, so it keeps its place in the queue).
    """

    project = models.ForeignKey(Project, on_delete=models.PROTECT, related_name="jobs")
    name = models.CharField(max_length=NAME_MAX, validators=[validate_dns_label])
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="jobs"
    )
    type = models.CharField(max_length=16, choices=JobType.choices, default=JobType.TRAIN)
    gpus = models.DecimalField(max_digits=6, decimal_places=2)
    pods = models.PositiveIntegerField(default=1)
    # Per pod, as Kubernetes' resources.requests/limits (issue 26): CPU in millicores and memory
    # in bytes (issue 33) requested (what the scheduler places on; 0 = none asked), the limits
    # (None = as the request for memory, none for CPU, as Run:AI), and a fractional GPU asked by
    # memory (R3.4/R5.5: `gpus` is then the share of the smallest device it stands for).
    cpu_millis = models.PositiveIntegerField(default=0)
    memory_bytes = models.PositiveBigIntegerField(default=0)
    cpu_limit_millis = models.PositiveIntegerField(null=True, blank=True)
    memory_limit_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    gpu_memory_bytes = models.PositiveBigIntegerField(null=True, blank=True)
    # Topology constraint (issue 38, R23.2, R23.3): {"required": level} and/or
    # {"preferred": level}, a level of its node pools by label key or short name; {}: anywhere.
    topology = models.JSONField(default=dict, blank=True)
    priority = models.IntegerField(null=True, blank=True)
    image = models.CharField(max_length=512, blank=True, default="")
    command = models.JSONField(default=list, blank=True)
    args = models.JSONField(default=list, blank=True)
    environment = models.JSONField(default=dict, blank=True)
    # names of `environment` whose values only the job's owner reads back (issue 32 item 8)
    secret_environment = models.JSONField(default=list, blank=True)
    ports = models.JSONField(default=list, blank=True)
    service_type = models.CharField(
        max_length=16, choices=ServiceType.choices, blank=True, default=""
    )
    volumes = models.JSONField(default=list, blank=True)
    sim_duration_s = models.PositiveIntegerField(null=True, blank=True)
    # A workload another tool made whose pods ask for Allot (issue 33): its namespace, its top
    # owner's kind and name, and the group's uid (the owner's, or the pod's when each pod stands
    # alone). Blank for Allot's own jobs. Allot places it; its owner makes and deletes it.
    external_uid = models.CharField(max_length=64, blank=True, default="")
    external_kind = models.CharField(max_length=63, blank=True, default="")
    external_owner = models.CharField(max_length=253, blank=True, default="")
    external_namespace = models.CharField(max_length=63, blank=True, default="")
    # The submitter's own estimate of the run time (Slurm's --time, advisory): it caps the
    # predicted run time, and stands alone where no finished job is like this one.
    estimate_s = models.PositiveIntegerField(null=True, blank=True)

    status = models.CharField(max_length=20, choices=Status.choices, default=Status.PENDING)
    placement = models.JSONField(default=list, blank=True)
    idle_since = models.DateTimeField(null=True, blank=True)  # GPUs under the idle threshold
    warned_for = models.CharField(max_length=32, blank=True, default="")  # policy warned about
    extended_s = models.PositiveIntegerField(default=0)  # added once by the owner's "extend"
    activity = models.CharField(max_length=64, blank=True, default="")  # the agent's last word
    active_at = models.DateTimeField(null=True, blank=True)  # when `activity` last changed
    stuck = models.BooleanField(default=False)  # no output or progress for too long
    pending_reason = models.TextField(blank=True, default="")
    # Predicted run time (from finished jobs like it, `scheduler.predict`) and, while pending, the
    # start time the scheduler's own forward simulation expects (`scheduler.eta`); advisory.
    expected_s = models.PositiveIntegerField(null=True, blank=True)
    expected_basis = models.CharField(max_length=32, blank=True, default="")
    # A running job's predicted end given how long it has run (`Predictor.outlook`), POSIX
    # seconds; infinity when it has outlived every finished job like it. Backfill's B1 reads it.
    expected_end = models.FloatField(null=True, blank=True)
    eta = models.DateTimeField(null=True, blank=True)
    # What `eta` is: "at" (the simulation starts the job then), "not_before" (a lower bound: it
    # waits on running jobs that outlived their predictions, taken as ending at once), "never"
    # (it cannot start as submitted: `eta_note` says why), or "" (not computed yet).
    eta_kind = models.CharField(max_length=16, blank=True, default="")
    eta_note = models.CharField(max_length=200, blank=True, default="")
    backfilled = models.BooleanField(default=False)  # started ahead of a reservation (B2)
    # GPU-seconds held in earlier runs, ended by an eviction or a move (service bands, L1)
    held_gpu_s = models.FloatField(default=0.0)
    submitted_at = models.DateTimeField(auto_now_add=True)
    # When the job last entered Pending (submitted, evicted, moved back or resumed): its waiting
    # time counts from here, not from the submission.
    queued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="job_project_name"),
            models.UniqueConstraint(
                fields=["external_uid"],
                condition=~models.Q(external_uid=""),
                name="job_external_uid",
            ),
            # gpus == 0 is a CPU-only job (issue 26), which must then ask for CPU or memory
            models.CheckConstraint(
                condition=models.Q(gpus__gt=0)
                | models.Q(cpu_millis__gt=0, gpus=0)
                | models.Q(memory_bytes__gt=0, gpus=0),
                name="job_gpus_or_cpu",
            ),
            models.CheckConstraint(condition=models.Q(pods__gte=1), name="job_pods_gte_1"),
        ]
        indexes = [
            models.Index(fields=["status"], name="job_status"),
            models.Index(fields=["finished_at"], name="job_finished_at"),
        ]

    def __str__(self) -> str:
        return f"{self.project.name}/{self.name}"

    @property
    def waiting_since(self) -> datetime:
        """When the current wait began: the last eviction or resume, else the submission."""
        return self.queued_at or self.submitted_at

    @property
    def holds_gpus(self) -> bool:
        """True while the job has a placement (ContainerCreating or Running)."""
        return self.status in HOLDING

    @property
    def allocated_gpus(self) -> float:
        """GPUs the job holds now: gpus x pods while placed, else 0."""
        return float(self.gpus) * self.pods if self.holds_gpus else 0.0

    @property
    def is_external(self) -> bool:
        """True for a workload another tool made (issue 33): Allot places it, its owner makes,
        resubmits and deletes it."""
        return bool(self.external_uid)

    @property
    def predicted_end(self) -> datetime | None:
        """When the running job is predicted to end given how long it has run (`expected_end`);
        None when unknown, not running, or it has outlived every finished job like it."""
        if not self.holds_gpus or self.expected_end is None or math.isinf(self.expected_end):
            return None
        return datetime.fromtimestamp(self.expected_end, UTC)

    @property
    def expected_start(self) -> str:
        """A pending job's expected start in words ("" unless pending), `eta_text`."""
        if self.status != Status.PENDING:
            return ""
        return eta_text.expected_start(self.eta_kind, self.eta, self.eta_note,
                                       considered=bool(self.pending_reason))  # fmt: skip

    @property
    def shown_eta(self) -> datetime | None:
        """A pending job's ETA, never in the past (None unless pending or when it cannot
        start as submitted)."""
        if self.status != Status.PENDING:
            return None
        return eta_text.shown_eta(self.eta_kind, self.eta)

    @property
    def outlived(self) -> bool:
        """The running job has run longer than the predictor's finished jobs like it tell."""
        return self.holds_gpus and self.expected_end is not None and math.isinf(self.expected_end)

    @property
    def nodes(self) -> list[str]:
        """The distinct nodes of the job's pods, in pod order."""
        return list(dict.fromkeys(pod.node for pod in self.placed_pods))

    @property
    def placed_pods(self) -> tuple[Pod, ...]:
        """Where each pod runs (`Job.placement` decoded); empty while the job holds nothing."""
        return decode(self.placement)


class JobEvent(models.Model):
    """Something that happened to a job, with the rule's reason in `message`.

    Kinds: submitted, scheduled, running, evicted, moved, succeeded, failed, timed out, stopped,
    resumed, deleted.
    Events outlive their job (`job` becomes null on deletion; `project` and `job_name` remain).
    """

    time = models.DateTimeField(db_index=True)
    job = models.ForeignKey(Job, null=True, on_delete=models.SET_NULL, related_name="events")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="job_events")
    job_name = models.CharField(max_length=NAME_MAX)
    kind = models.CharField(max_length=20)
    message = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["time", "id"]
        indexes = [models.Index(fields=["project", "job_name"], name="jobevent_project_job")]

    def __str__(self) -> str:
        return f"{self.time:%H:%M:%S} {self.project_id}/{self.job_name} {self.kind}"


class RunEnd(models.TextChoices):
    """How a run ended; blank while it goes on."""

    NONE = "", "running"
    COMPLETED = "completed"
    FAILED = "failed"
    TIMED_OUT = "timed out"
    EVICTED = "evicted"  # reclaimed or preempted for another job; the job waits again
    MOVED = "moved"  # restarted elsewhere by consolidation
    STOPPED = "stopped"  # by its owner


class JobRun(models.Model):
    """One start of a job, until it ended: where, how long, how it ended and why, its logs.

    Number 1 is the first start; an eviction, a move or a resume makes the next start run 2, and
    so on. The cycle's commit opens and closes runs with the job's status (one transaction); the
    logs are kept after the commit, read from the cluster before the run's pods are stopped, the
    last `ALLOT_RUN_LOG_LINES` lines at most.

    Runs outlive their job, as events do: GPU-hour accounting adds them up (portal.jobs.usage),
    and a month's bill must not shrink when a job is deleted or the history's retention prunes
    it. `job` becomes null then (its logs are dropped); `project`, `job_name`, `user` and
    `job_type` are copied when the run opens and stay. A project's deletion takes its runs.
    """

    job = models.ForeignKey(Job, null=True, on_delete=models.SET_NULL, related_name="runs")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="job_runs")
    job_name = models.CharField(max_length=NAME_MAX)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
        related_name="job_runs",
    )  # fmt: skip
    job_type = models.CharField(max_length=16, choices=JobType.choices)
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    placement = models.JSONField(default=list, blank=True)
    gpus = models.FloatField()  # GPUs held: gpus x pods
    # CPU and memory held, per pod x pods (issue 26), kept like `gpus` for the accounting
    cpu_millis = models.PositiveBigIntegerField(default=0, db_default=0)
    memory_bytes = models.PositiveBigIntegerField(default=0, db_default=0)
    end = models.CharField(max_length=16, choices=RunEnd.choices, blank=True, default="")
    ended_by = models.CharField(max_length=200, blank=True, default="")  # "team-a's reclaim"
    reason = models.TextField(blank=True, default="")
    logs = models.TextField(blank=True, default="")
    logs_kept_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [
            models.UniqueConstraint(fields=["job", "number"], name="jobrun_job_number"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id}/{self.job_name} run {self.number}"

    def save(self, *args, **kwargs):
        """A run made from a job alone (tests, the admin shell) copies what it must keep of it;
        the cycle's bulk inserts set them themselves."""
        if self.job is not None and self.project_id is None:
            job = self.job
            self.project_id, self.job_name = job.project_id, job.name
            self.user_id, self.job_type = job.user_id, job.type
            self.cpu_millis = job.cpu_millis * job.pods
            self.memory_bytes = job.memory_bytes * job.pods
        super().save(*args, **kwargs)

    @property
    def nodes(self) -> list[str]:
        """The distinct nodes of the run's pods, in pod order."""
        return list(dict.fromkeys(pod.node for pod in decode(self.placement)))

    def duration_s(self, now: datetime) -> float:
        """Seconds from its start to its end (or to `now` while it goes on)."""
        return max(((self.ended_at or now) - self.started_at).total_seconds(), 0.0)

    def gpu_hours(self, now: datetime) -> float:
        """GPU-hours the run held: its GPUs times its duration."""
        return self.gpus * self.duration_s(now) / 3600


class UsageSample(models.Model):
    """One project's usage at one moment, written by the cycle (at most every few seconds)."""

    time = models.DateTimeField(db_index=True)
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="usage")
    quota = models.FloatField(default=0.0)
    fair_share = models.FloatField(default=0.0)
    allocated_gpus = models.FloatField(default=0.0)
    running_jobs = models.PositiveIntegerField(default=0)
    pending_jobs = models.PositiveIntegerField(default=0)
    utilization = models.FloatField(null=True, blank=True)  # 0..1 of the allocated GPUs
    idle_gpus = models.FloatField(default=0.0)  # allocated to running jobs under 5 % utilization
    # requested by the pods of its running jobs (issue 26); big: a cluster's bytes pass 2**31;
    # db_default: raw INSERTs that predate them (the dashboard benchmark's fill) still work
    allocated_cpu_millis = models.PositiveBigIntegerField(default=0, db_default=0)
    allocated_memory_bytes = models.PositiveBigIntegerField(default=0, db_default=0)
    simulated = models.BooleanField(default=False)

    class Meta:
        ordering = ["time", "id"]
        indexes = [models.Index(fields=["project", "time"], name="usage_project_time")]


class UsageRollup(models.Model):
    """UsageSamples summed per project into 5-minute and hourly buckets, for long ranges.

    Written together with each sample (an upsert that adds to the bucket), so a rollup is always
    exactly the sum of the samples in it and the analytics of 30 days read 720 rows a project
    instead of 260,000. Averages are sums divided by `samples`.
    """

    RESOLUTIONS = (300, 3600)

    resolution_s = models.PositiveIntegerField()
    bucket = models.DateTimeField()
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="usage_rollups")
    samples = models.PositiveIntegerField(default=0)
    quota_sum = models.FloatField(default=0.0)
    fair_share_sum = models.FloatField(default=0.0)
    allocated_sum = models.FloatField(default=0.0)
    running_sum = models.FloatField(default=0.0)
    pending_sum = models.FloatField(default=0.0)
    utilization_sum = models.FloatField(default=0.0)
    utilization_samples = models.PositiveIntegerField(default=0)
    idle_sum = models.FloatField(default=0.0)
    cpu_millis_sum = models.FloatField(default=0.0, db_default=0.0)
    memory_bytes_sum = models.FloatField(default=0.0, db_default=0.0)
    simulated = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["resolution_s", "project", "bucket"], name="usagerollup_bucket"
            )
        ]
        indexes = [models.Index(fields=["resolution_s", "bucket"], name="usagerollup_time")]


class SessionGrant(models.Model):
    """Who besides its owner may open a job's notebook (issue 32 item 3): a share the owner
    made with a teammate (`user`) or with the whole project (`user` null), or an admin's
    "access server" (kind ADMIN, with its reason, until `expires_at`). A notebook is its
    owner's alone otherwise, as JupyterHub's servers are; a grant ends when revoked, expired or
    the job is deleted."""

    SHARE, ADMIN = "share", "admin"

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="session_grants")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
        related_name="session_grants",
    )  # fmt: skip
    kind = models.CharField(max_length=8, choices=[(SHARE, "share"), (ADMIN, "admin access")])
    granted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True, default="")
    created_at = models.DateTimeField()
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["job", "revoked_at"], name="sessiongrant_live")]

    def __str__(self) -> str:
        return f"{self.kind} of {self.job_id} to {self.user_id or 'the project'}"
