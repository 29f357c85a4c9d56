"""REST endpoints for jobs, their events and logs, the overview and scheduling cycles."""

from __future__ import annotations

import io

from django.conf import settings
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
    inline_serializer,
)
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from portal import access
from portal.api import dry_run
from portal.api.fields import (
    DATE_OR_TIME,
    DATE_TIME,
    WHOLE_NUMBER,
    refuse_empty,
    whole_number,
)
from portal.api.permissions import IsClusterAdmin, MayChangeJob
from portal.api.serializers.analytics import AnalyticsSerializer
from portal.api.serializers.jobs import (
    BulkJobsSerializer,
    JobEventSerializer,
    JobRunSerializer,
    JobSerializer,
)
from portal.api.throttling import SubmitLimited
from portal.core import csvcells
from portal.core.errors import conflict
from portal.dashboards import analytics
from portal.dashboards.overview import build_overview, visible_projects
from portal.jobs import queries, services
from portal.jobs.models import Job, JobEvent, JobRun, JobType, Status
from portal.scheduling import cycle_metrics, lifecycle
from portal.scheduling.agent import get_agent, job_logs
from portal.scheduling.settle import settle_response

ORDERINGS = ("id", "-id")  # submission order, or newest first
# What a listed job shows: its own columns, and of its project and user only their names (a
# project row has some thirty columns, a user's its password hash: a page of 50 jobs builds them).
LISTED = (*(field.name for field in Job._meta.concrete_fields), "project__name", "user__username")
TAIL_MAX = 10_000
RUN_MAX = 2**31 - 1  # a run's number is a PostgreSQL integer
MAX_STEP = 86400 * 30  # an analytics point: at most 30 days


def filtered(jobs, params) -> object:
    """`jobs` narrowed by the history filters (`portal.jobs.queries.history`), in submission
    order or, with ?ordering=-id, newest first; any bad filter is a 400 naming it."""
    refuse_empty(params, ("since", "until"), "a date or a date and time")
    refuse_empty(params, ("type", "ordering"), "one of the values the schema lists")
    jobs, errors = queries.history(jobs, params)
    ordering = params.get("ordering") or "id"
    if ordering not in ORDERINGS:
        errors["ordering"] = [f"unknown ordering {ordering[:20]!r}; one of {', '.join(ORDERINGS)}"]
    if errors:
        raise ValidationError(errors)
    return jobs.order_by(ordering)


class JobMixin:
    """Looks the job up by project and name through the access helpers (404 when not visible)."""

    def job(self) -> Job:
        job = access.get_job_for(self.request.user, self.kwargs["project"], self.kwargs["name"])
        self.check_object_permissions(self.request, job)
        return job


STATUS_NAMES = "|".join(Status.values)
# what queries.history reads: names separated by commas, spaces around them and empty ones ignored
STATUS_LIST = rf"^\s*(?:(?:{STATUS_NAMES})\s*)?(?:,\s*(?:(?:{STATUS_NAMES})\s*)?)*$"


@extend_schema_view(
    get=extend_schema(
        parameters=[
            OpenApiParameter("project", str, description="only this project's jobs"),
            OpenApiParameter(
                "status",
                {"type": "string", "pattern": STATUS_LIST},
                description="one status or several, comma-separated: "
                f"{', '.join(Status.values)} (e.g. Succeeded,Failed,TimedOut,Stopped for history)",
            ),
            OpenApiParameter("type", str, enum=JobType.values),
            OpenApiParameter("user", str, description="only jobs submitted by this username"),
            OpenApiParameter(
                "since",
                DATE_OR_TIME,
                description="submitted at or after (a date or a date and time)",
            ),
            OpenApiParameter(
                "until", DATE_OR_TIME, description="submitted before (a bare date: that whole day)"
            ),
            OpenApiParameter("ordering", str, enum=ORDERINGS, description="-id: newest first"),
        ]
    ),
    post=extend_schema(
        parameters=[
            OpenApiParameter(
                "dry_run",
                bool,
                description="true: store nothing; answer 200 with what the next scheduling "
                "cycle would do on today's state: would_start, would_preempt (the running jobs "
                "it would evict or move, with the scheduler's reasons), pending_reason and "
                "warnings (issue 34 item 2)",
            )
        ],
        responses={
            201: JobSerializer,
            200: inline_serializer(
                "DryRun",
                {
                    "dry_run": serializers.BooleanField(),
                    "would_start": serializers.BooleanField(
                        help_text="whether the next cycle would start it"
                    ),
                    "would_preempt": inline_serializer(
                        "WouldPreempt",
                        {
                            "job": serializers.CharField(
                                help_text="project/name, or another project's job"
                            ),
                            "user": serializers.CharField(),
                            "gpus": serializers.FloatField(),
                            "action": serializers.ChoiceField(choices=["evict", "move"]),
                            "reason": serializers.CharField(),
                        },
                        many=True,
                    ),
                    "pending_reason": serializers.CharField(
                        help_text="why it would wait; empty when it would start"
                    ),
                    "warnings": serializers.ListField(child=serializers.CharField()),
                },
            ),
        },
    ),
)
class JobList(SubmitLimited, generics.ListCreateAPIView):
    """GET the jobs you may see, finished ones included until the retention setting prunes them
    (filters ?project= ?status= ?type= ?user= ?since= ?until=, paginated); POST a job."""

    serializer_class = JobSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        jobs = access.jobs_for(self.request.user).only(*LISTED)
        return filtered(jobs, self.request.query_params)

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        name = request.data.get("project") if isinstance(request.data, dict) else None
        if isinstance(name, str):  # 404 (or 403) before anything else is said about the body
            serializer.validate_project(name)  # checked once: validation reuses the answer
        dry = dry_run_asked(request.query_params)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        if dry:  # what it would do to running jobs, as `kubectl --dry-run=server` stores nothing
            plan = dry_run.preview(request.user, fields)
            key = (fields["project"].name, fields["name"])
            warnings = serializer.context.get("warnings", {}).get(key, [])
            return Response(plan.as_data() | {"warnings": warnings})
        project = fields.pop("project")
        serializer.instance = services.submit_job(request.user, project, **fields)
        return Response(serializer.data, status=status.HTTP_201_CREATED)  # its fields, built once


def dry_run_asked(params) -> bool:
    """?dry_run=true|false (also 1|0); anything else is a 400 naming the parameter."""
    value = params.get("dry_run", "false").strip().lower()
    if value not in ("true", "1", "false", "0"):
        raise ValidationError({"dry_run": [f"must be true or false, not {value[:20]!r}"]})
    return value in ("true", "1")


class JobBulk(SubmitLimited, APIView):
    """POST many jobs at once (a sweep, `allot submit --from FILE`): all are stored Pending, or
    none. Each job is checked as `POST /api/v1/jobs/` checks it; errors name the failing jobs by
    their index: `{"jobs": {"1": {"gpus": ["must be greater than 0"]}}}`."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=BulkJobsSerializer,
        responses={
            201: inline_serializer(
                "BulkCreated",
                {
                    "created": serializers.IntegerField(),
                    "jobs": inline_serializer(
                        "BulkCreatedJob",
                        {"project": serializers.CharField(), "name": serializers.CharField(),
                         "status": serializers.CharField()},
                        many=True,
                    ),
                },
            )
        },
    )  # fmt: skip
    def post(self, request) -> Response:
        serializer = BulkJobsSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        entries = []
        for fields in serializer.validated_data["jobs"]:
            fields = dict(fields)
            entries.append((fields.pop("project"), fields))
        jobs = services.submit_jobs(request.user, entries)
        created = [{"project": job.project.name, "name": job.name, "status": job.status}
                   for job in jobs]  # fmt: skip
        return Response({"created": len(jobs), "jobs": created}, status=status.HTTP_201_CREATED)


class JobDetail(JobMixin, generics.RetrieveDestroyAPIView):
    """GET a job; DELETE removes it whatever its status (a running one is stopped, its GPUs free
    at once; its events stay, its name can be used again) - `runai delete`."""

    serializer_class = JobSerializer
    permission_classes = [IsAuthenticated, MayChangeJob]

    def get_object(self) -> Job:
        return self.job()

    def perform_destroy(self, job: Job) -> None:
        services.delete_job(job, self.request.user)


class JobStop(JobMixin, APIView):
    """POST: end a pending or running job's run and keep the job, Stopped (its GPUs free at once,
    its events, runs and name kept) until it is resumed or deleted; 409 for a job already ended."""

    permission_classes = [IsAuthenticated, MayChangeJob]

    @extend_schema(request=None, responses={200: JobSerializer})
    def post(self, request, project: str, name: str) -> Response:
        job = lifecycle.stop(self.job(), request.user)
        return Response(JobSerializer(job, context={"request": request}).data)


class JobResume(JobMixin, APIView):
    """POST: queue a Stopped job again with the same spec (Pending, waiting from now); its next
    start is a new run. 409 for a job that is not Stopped."""

    permission_classes = [IsAuthenticated, MayChangeJob]

    @extend_schema(request=None, responses={200: JobSerializer})
    def post(self, request, project: str, name: str) -> Response:
        job = services.resume_job(self.job(), request.user)
        return Response(JobSerializer(job, context={"request": request}).data)


class JobEvents(JobMixin, generics.ListAPIView):
    """GET a job's history: submitted, scheduled, evicted (with the rule), ..."""

    serializer_class = JobEventSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return JobEvent.objects.filter(job=self.job()).order_by("time", "id")


class JobRuns(JobMixin, generics.ListAPIView):
    """GET a job's runs, first first: every start, where, how long, how it ended (completed,
    evicted by whom and why, moved, stopped, failed, timed out) and its GPU-hours."""

    serializer_class = JobRunSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return JobRun.objects.filter(job=self.job()).order_by("number")

    def get_serializer_context(self) -> dict:
        return {**super().get_serializer_context(), "now": timezone.now()}


class JobLogs(JobMixin, APIView):
    """GET the last `?tail=` lines (default 200) of a job's log: the current run's from the
    cluster while it runs, else those kept of its last run; `?run=N` for run N's."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "tail",
                {"type": "integer", "minimum": 1, "maximum": TAIL_MAX},
                description=f"1..{TAIL_MAX}, default 200",
            ),
            OpenApiParameter(
                "run",
                {"type": "integer", "minimum": 1, "maximum": RUN_MAX},
                description="a run's number (default: the latest)",
            ),
        ],
        responses=inline_serializer(
            "JobLogs",
            {
                "project": serializers.CharField(),
                "name": serializers.CharField(),
                "status": serializers.CharField(),
                "run": serializers.IntegerField(allow_null=True),
                "lines": serializers.ListField(child=serializers.CharField()),
                "simulated": serializers.BooleanField(),
            },
        ),
    )
    def get(self, request, project: str, name: str) -> Response:
        job = self.job()
        tail = whole_number(request.query_params, "tail", 1, TAIL_MAX, 200)
        run = self.run(job, whole_number(request.query_params, "run", 1, RUN_MAX))
        if run is not None and run.ended_at is None and job.holds_gpus:
            lines = job_logs(job, tail)  # the run going on: from the cluster
        else:
            lines = run.logs.splitlines()[-tail:] if run is not None and run.logs else []
        return Response(
            {
                "project": job.project.name,
                "name": job.name,
                "status": job.status,
                "run": run.number if run is not None else None,
                "lines": lines,
                "simulated": get_agent().simulated,
            }
        )

    @staticmethod
    def run(job: Job, number: int | None) -> JobRun | None:
        """Run `number` of the job (a 404 for none such), else its latest."""
        runs = JobRun.objects.filter(job=job).only("number", "ended_at", "logs")
        if number is None:
            return runs.order_by("-number").first()
        run = runs.filter(number=number).first()
        if run is None:
            raise NotFound({"run": [f"job {job.project.name}/{job.name} has no run {number}"]})
        return run


class JobShell(JobMixin, APIView):
    """POST: where to open an interactive shell in a running job's first pod (`allot bash`).

    Researchers and admins of the project only (a shell can change the job). An agent that opens
    no shells (the simulated cluster: it has no containers) makes it a 409 that says so; a job
    that is not running is a 409 naming its status.
    """

    permission_classes = [IsAuthenticated, MayChangeJob]

    @extend_schema(
        request=None,
        responses=inline_serializer(
            "JobShell",
            {"websocket": serializers.CharField(), "pod": serializers.CharField()},
        ),
    )
    def post(self, request, project: str, name: str) -> Response:
        job = self.job()
        if job.status != Status.RUNNING:
            raise conflict("status", f"job {job.project.name}/{job.name} is {job.status}; "
                           "a shell needs a Running job")  # fmt: skip
        if not get_agent().supports_shell:  # the simulated cluster
            raise conflict(
                "detail",
                f"job {job.project.name}/{job.name} runs on the simulated cluster, which has "
                "no containers to open a shell in (the Kubernetes agent gives real shells)",
            )
        return Response(
            {
                "websocket": f"/ws/jobs/{job.project.name}/{job.name}/shell/",
                "pod": f"{job.name}-0",
            }
        )


class JobExtend(JobMixin, APIView):
    """POST: push a running job's time limits and idle timeout back by the project's extension,
    once (409 when the project allows none, or it was extended already)."""

    permission_classes = [IsAuthenticated, MayChangeJob]

    @extend_schema(request=None, responses={200: JobSerializer})
    def post(self, request, project: str, name: str) -> Response:
        job = services.extend_job(self.job(), request.user)
        return Response(JobSerializer(job, context={"request": request}).data)


class Overview(APIView):
    """GET cluster totals, per-project allocation, running and pending jobs, nodes and devices."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: dict})
    def get(self, request) -> Response:
        return Response(build_overview(request.user))


class CSVRenderer(BaseRenderer):
    """`?format=csv`: the analytics series as one CSV row per time and project."""

    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        buffer = io.StringIO()
        writer = csvcells.writer(buffer)
        if isinstance(data, dict) and "csv" in data:
            writer.writerows(data["csv"])
        else:  # an error body: field, reason
            for field, reasons in (data or {}).items():
                for reason in reasons if isinstance(reasons, list) else [reasons]:
                    writer.writerow([field, reason])
        return buffer.getvalue().encode()


class AnalyticsAllocation(APIView):
    """GET GPUs allocated per project over time, with quota, fair share, pending jobs, GPU
    utilization, and the CPU cores and memory (GiB) its running jobs' pods request:
    `?from=&to=` (ISO 8601, default the last 24 h) in steps of `?step=` seconds
    (default: a nice step giving at most 1,000 points). `?format=csv` downloads the same series,
    a row per step and project: time, project, allocated_gpus, quota, fair_share, pending_jobs,
    running_jobs, utilization, idle_gpus, allocated_cpu_cores, allocated_memory_gib.
    Projects are those you may see; the cluster series cover the whole cluster."""

    permission_classes = [IsAuthenticated]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, CSVRenderer]

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "from",
                DATE_TIME,
                description="start (default: to - 24 h); before 'to', at most 400 days before it",
            ),
            OpenApiParameter("to", DATE_TIME, description="end (default: now)"),
            OpenApiParameter(
                "step",
                {"type": "integer", "minimum": 1, "maximum": MAX_STEP},
                description=f"seconds per point, 1..{MAX_STEP}, at most "
                f"{analytics.MAX_POINTS} points (default: a nice step giving at most that many)",
            ),
        ],
        responses={
            (200, "application/json"): AnalyticsSerializer,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR),
        },
    )
    def get(self, request) -> Response:
        params = request.query_params
        refuse_empty(params, ("from", "to"), "a date and time")
        start, end, errors = analytics.parse_range(params.get("from"), params.get("to"),
                                                   timezone.now())  # fmt: skip
        if errors:
            raise ValidationError(errors)
        step = parse_step(params.get("step"), start, end)
        series = analytics.allocation(start, end, step, visible_projects(request.user))
        if request.accepted_renderer.format == "csv":
            stamp = f"{start:%Y%m%dT%H%M}-{end:%Y%m%dT%H%M}"
            return Response(
                {"csv": list(series.csv_rows())},
                headers={
                    "Content-Disposition": f'attachment; filename="allot-allocation-{stamp}.csv"'
                },
            )
        return Response(series.as_dict())


def parse_step(raw: str | None, start, end) -> int:
    """?step= in seconds (10 s .. 30 days, at most MAX_POINTS points), or the automatic one."""
    if raw is None:
        return analytics.auto_step(start, end, settings.ALLOT_USAGE_SAMPLE_INTERVAL_S)
    if not (WHOLE_NUMBER.fullmatch(raw) and 1 <= int(raw) <= MAX_STEP):
        message = f"must be a whole number of seconds between 1 and {MAX_STEP}"
        raise ValidationError({"step": [message]})
    step = int(raw)
    points = (end - start).total_seconds() / step
    if points > analytics.MAX_POINTS:
        raise ValidationError(
            {"step": [f"{step} s gives {points:.0f} points; at most {analytics.MAX_POINTS}"]}
        )
    return step


class SchedulerCycles(APIView):
    """GET: the latest cycles' timings, lock hold time among them (`cycle_metrics`).
    POST: run cycles until one decides nothing (with the agent's transitions); the decisions."""

    permission_classes = [IsClusterAdmin]

    @extend_schema(responses={200: dict})
    def get(self, request) -> Response:
        return Response(cycle_metrics.summary())

    @extend_schema(request=None, responses={200: dict})
    def post(self, request) -> Response:

        return Response(settle_response(), status=status.HTTP_200_OK)
