"""REST endpoints for jobs, their events and logs, the overview and scheduling cycles."""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from portal.api.errors import conflict
from portal.jobs import services
from portal.jobs.models import Job, JobEvent, JobType, Status
from portal.jobs.overview import build_overview
from portal.jobs.serializers import JobEventSerializer, JobSerializer
from portal.tenancy import access
from portal.tenancy.permissions import IsClusterAdmin, MaySubmit

FILTERS = {"status": Status.values, "type": JobType.values}
TAIL_MAX = 10_000


def filtered(jobs, params) -> object:
    """`jobs` narrowed by ?project= ?status= ?type=; an unknown status or type is a 400."""
    for field, allowed in FILTERS.items():
        value = params.get(field)
        if value is None:
            continue
        if value not in allowed:
            raise ValidationError(
                {field: [f"unknown {field} {value!r}; one of {', '.join(allowed)}"]}
            )
        jobs = jobs.filter(**{field: value})
    if params.get("project") is not None:
        jobs = jobs.filter(project__name=params["project"])
    return jobs


class JobMixin:
    """Looks the job up by project and name through the access helpers (404 when not visible)."""

    def job(self) -> Job:
        job = access.get_job_for(self.request.user, self.kwargs["project"], self.kwargs["name"])
        self.check_object_permissions(self.request, job)
        return job


@extend_schema(
    parameters=[
        OpenApiParameter("project", str, description="only this project's jobs"),
        OpenApiParameter("status", str, enum=Status.values),
        OpenApiParameter("type", str, enum=JobType.values),
    ]
)
class JobList(generics.ListCreateAPIView):
    """GET the jobs you may see (filters ?project= ?status= ?type=); POST a job (Pending)."""

    serializer_class = JobSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        jobs = access.jobs_for(self.request.user).order_by("id")
        return filtered(jobs, self.request.query_params)

    def create(self, request, *args, **kwargs):
        self._check_project_visible(request.data)
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = dict(serializer.validated_data)
        project = fields.pop("project")
        job = services.submit_job(request.user, project, **fields)
        return Response(self.get_serializer(job).data, status=status.HTTP_201_CREATED)

    def _check_project_visible(self, data) -> None:
        """404 for a project the user may not see, before anything else is said about the body."""
        name = data.get("project") if isinstance(data, dict) else None
        visible = access.projects_for(self.request.user)
        if isinstance(name, str) and not visible.filter(name=name).exists():
            raise NotFound({"project": [f"project {name!r} not found"]})


class JobDetail(JobMixin, generics.RetrieveDestroyAPIView):
    """GET a job; DELETE stops it, frees its GPUs at once and removes it (events stay)."""

    serializer_class = JobSerializer
    permission_classes = [IsAuthenticated, MaySubmit]

    def get_object(self) -> Job:
        return self.job()

    def perform_destroy(self, job: Job) -> None:
        services.stop_job(job, self.request.user)


class JobEvents(JobMixin, generics.ListAPIView):
    """GET a job's history: submitted, scheduled, evicted (with the rule), ..."""

    serializer_class = JobEventSerializer
    permission_classes = [IsAuthenticated]

    def get_queryset(self):
        return JobEvent.objects.filter(job=self.job()).order_by("time", "id")


class JobLogs(JobMixin, APIView):
    """GET the last `?tail=` lines (default 200) of a job's log, from the agent."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        parameters=[OpenApiParameter("tail", int, description=f"1..{TAIL_MAX}, default 200")],
        responses=inline_serializer(
            "JobLogs",
            {
                "project": serializers.CharField(),
                "name": serializers.CharField(),
                "status": serializers.CharField(),
                "lines": serializers.ListField(child=serializers.CharField()),
                "simulated": serializers.BooleanField(),
            },
        ),
    )
    def get(self, request, project: str, name: str) -> Response:
        from portal.scheduling.agent import job_logs

        job = self.job()
        tail = parse_tail(request.query_params.get("tail", "200"))
        return Response(
            {
                "project": job.project.name,
                "name": job.name,
                "status": job.status,
                "lines": job_logs(job, tail),
                "simulated": settings.ALLOT_AGENT == "simulated",
            }
        )


def parse_tail(raw: str) -> int:
    """?tail= as an int in 1..TAIL_MAX, or a 400 naming it."""
    try:
        tail = int(raw)
    except ValueError:
        raise ValidationError({"tail": [f"must be an integer, not {raw!r}"]}) from None
    if not 1 <= tail <= TAIL_MAX:
        raise ValidationError({"tail": [f"must be between 1 and {TAIL_MAX}"]})
    return tail


class JobShell(JobMixin, APIView):
    """POST: where to open an interactive shell in a running job's first pod (`allot bash`).

    Researchers and admins of the project only (a shell can change the job). The simulated
    cluster has no containers, so there it is a 409 that says so; a job that is not running is a
    409 naming its status.
    """

    permission_classes = [IsAuthenticated, MaySubmit]

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
        if settings.ALLOT_AGENT == "simulated":
            raise conflict(
                "detail",
                f"job {job.project.name}/{job.name} runs on the simulated cluster, which has "
                "no containers to open a shell in (ALLOT_AGENT=kubernetes gives real shells)",
            )
        return Response(
            {
                "websocket": f"/ws/jobs/{job.project.name}/{job.name}/shell/",
                "pod": f"{job.name}-0",
            }
        )


class Overview(APIView):
    """GET cluster totals, per-project allocation, running and pending jobs, nodes and devices."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: dict})
    def get(self, request) -> Response:
        return Response(build_overview(request.user))


class SchedulerCycles(APIView):
    """POST: run cycles until one decides nothing (with the agent's transitions); the decisions."""

    permission_classes = [IsClusterAdmin]

    @extend_schema(request=None, responses={200: dict})
    def post(self, request) -> Response:
        from portal.scheduling.settle import settle_response

        return Response(settle_response(), status=status.HTTP_200_OK)
