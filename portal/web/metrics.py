"""Prometheus metrics at `/metrics`, for operators' Prometheus, never for the public.

The endpoint answers only a bearer token equal to `ALLOT_METRICS_TOKEN`: unset, it is 404 (the
portal exports nothing by default); no token is 401, a wrong one 403. Names follow Prometheus'
conventions: the `allot_` prefix, base units (seconds, bytes, CPU cores), `_total` on counters.

Three sources, each computed where it is true for every process:
- per project, gauges computed at scrape time from `build_full_overview()`, the code the overview
  page and `GET /api/v1/overview/` use, so the two can never disagree (what the project holds
  by node pool from its rows' `pools`);
- per scheduling cycle, the running totals every worker adds to in the cache
  (`portal.scheduling.cycle_metrics`), exposed here as histograms (stage durations, each job's
  submit-to-start latency) and counters; the agent's failed API calls and back-offs the same
  way (each cycle adds its process's, each scrape this process's);
- per web request, a histogram this process keeps in its own registry (the route is the URL
  pattern's name, never the raw path, so a job's name does not make a series of its own).
"""

from __future__ import annotations

import hmac
from time import perf_counter

from django.conf import settings
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
)

from portal.budgets.models import Budget
from portal.budgets.usage import measure_all
from portal.core import clock
from portal.dashboards.overview import build_full_overview
from portal.jobs.models import JobEvent
from portal.scheduling import cycle_metrics
from portal.scheduling.agent import built_agent

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})

REQUESTS = CollectorRegistry(auto_describe=True)
REQUEST_SECONDS = Histogram(
    "allot_http_request_duration_seconds",
    "Time the portal took to answer a request, by route (URL pattern name) and method.",
    ["route", "method", "status"],
    registry=REQUESTS,
)


class ProjectCollector:
    """The overview's per-project figures, read from the database at each scrape. What the
    project's placed pods hold is split by node pool (`node_pool`, the overview's `pools`): a
    pool the project may use has its series even at 0. Quota, fair share and pending jobs are
    the project's across its pools (Allot has one quota per project, not one per pool)."""

    GAUGES = (  # (metric, help, overview key, scale)
        ("allot_project_quota_gpus", "Deserved GPUs (the project's quota).", "quota", 1),
        ("allot_project_fair_share_gpus", "GPUs the fair share gives the project.",
         "fair_share", 1),
        ("allot_project_pending_jobs", "Jobs waiting to start.", "pending_jobs", 1),
    )  # fmt: skip
    POOL_GAUGES = (  # the same, of the project's `pools` rows
        ("allot_project_allocated_gpus", "GPUs the project's jobs hold, by node pool.",
         "allocated_gpus", 1),
        ("allot_project_allocated_cpu_cores", "CPU cores the project's placed pods request, by "
         "node pool.", "allocated_cpu_millis", 0.001),
        ("allot_project_allocated_memory_bytes", "Memory the project's placed pods request, by "
         "node pool.", "allocated_memory_bytes", 1),
        ("allot_project_running_jobs", "Jobs holding resources, by the node pool of their "
         "first pod.", "running_jobs", 1),
    )  # fmt: skip

    def collect(self):
        full = build_full_overview()
        yield from _gauges(self.GAUGES, ["project"],
                           [([row["name"]], row) for row in full["projects"]])  # fmt: skip
        yield from _gauges(self.POOL_GAUGES, ["project", "node_pool"],
                           [([row["name"], pool["pool"]], pool)
                            for row in full["projects"] for pool in row["pools"]])  # fmt: skip
        oldest = GaugeMetricFamily(
            "allot_project_oldest_pending_seconds",
            "How long the project's oldest pending job has waited (0 when none waits).",
            labels=["project"],
        )
        waits: dict[str, float] = {row["name"]: 0.0 for row in full["projects"]}
        for job in full["pending"]:
            waits[job["project"]] = max(waits.get(job["project"], 0.0), job["wait_s"])
        for project, wait in waits.items():
            oldest.add_metric([project], wait)
        yield oldest
        submitted = CounterMetricFamily(
            "allot_job_submissions",
            "Jobs submitted, by project (from the jobs' 'submitted' events, kept with the jobs).",
            labels=["project"],
        )
        counts = dict(
            JobEvent.objects.filter(kind="submitted")
            .values_list("project__name")
            .annotate(n=Count("id"))
        )
        for project in waits:
            submitted.add_metric([project], counts.get(project, 0))
        yield submitted


def _gauges(gauges, labels: list[str], rows):
    """A gauge family per (metric, help, key, scale) of `gauges`, of each (label values, row)."""
    families = {
        key: (GaugeMetricFamily(name, text, labels=labels), scale)
        for name, text, key, scale in gauges
    }
    for values, row in rows:
        for key, (family, scale) in families.items():
            family.add_metric(values, float(row[key] or 0) * scale)
    return [family for family, _ in families.values()]


class CycleCollector:
    """The scheduling cycles' running totals, added to by every worker."""

    def collect(self):
        totals = cycle_metrics.totals()
        stages = HistogramMetricFamily(
            "allot_cycle_stage_duration_seconds",
            "Time a scheduling cycle spent in each stage (observe, lock, snapshot, plan, "
            "commit, carry_out).",
            labels=["stage"],
        )
        for stage in sorted({n.split("|")[1] for n in totals if n.startswith("count|")}):
            buckets = [
                (repr(bound), totals.get(f"bucket|{stage}|{bound}", 0))
                for bound in cycle_metrics.BUCKETS
            ]
            buckets.append(("+Inf", totals[f"count|{stage}"]))
            stages.add_metric(
                [stage.removesuffix("_s")], buckets, totals.get(f"sum_us|{stage}", 0) / 1e6
            )
        yield stages
        yield _start_latency(totals)
        yield _counter(totals, "cycles", "allot_cycles", "Scheduling cycles by outcome.", "status")
        yield _counter(
            totals, "decision", "allot_cycle_decisions", "Decisions by kind (start, evict, move).",
            "kind",
        )  # fmt: skip
        yield _counter(
            totals, "eviction", "allot_evictions",
            "Running jobs evicted, by the action that decided (reclaim, preempt, ...).", "reason",
        )  # fmt: skip


def _start_latency(totals: dict[str, int]) -> HistogramMetricFamily:
    family = HistogramMetricFamily(
        "allot_job_start_latency_seconds",
        "Time from a job's submission to its first start (the cycle placing it), by project.",
        labels=["project"],
    )
    for project in sorted(n.split("|")[1] for n in totals if n.startswith("start_count|")):
        buckets = [
            (repr(bound), totals.get(f"start_bucket|{project}|{bound}", 0))
            for bound in cycle_metrics.START_BUCKETS
        ]
        buckets.append(("+Inf", totals[f"start_count|{project}"]))
        family.add_metric([project], buckets, totals.get(f"start_sum_us|{project}", 0) / 1e6)
    return family


class AgentCollector:
    """The agent's failed API calls and back-offs, added to by every process that runs one."""

    def collect(self):
        agent = built_agent()  # this process's status and log reads count too
        if agent is not None:
            cycle_metrics.record_agent(agent.take_counts())
        totals = cycle_metrics.totals()
        yield _counter(
            totals, "api_error", "allot_agent_api_errors",
            "Calls of the agent to the cluster's API that failed, by verb, resource and HTTP "
            "code ('none': no answer); 404 to a delete and 409 AlreadyExists to a create are "
            "done, not failures.", "verb", "resource", "code",
        )  # fmt: skip
        yield _counter(
            totals, "backoff", "allot_agent_backoffs",
            "Back-offs the agent began, by scope: agent (the API server cannot be reached), "
            "job (one job's start or stop), watch (the pod watch).", "scope",
        )  # fmt: skip
        yield _counter(
            totals, "backoff_us", "allot_agent_backoff_seconds",
            "Seconds of the waits those back-offs set, by scope.", "scope", scale=1e-6,
        )  # fmt: skip


def _counter(totals: dict[str, int], prefix: str, name: str, text: str, *labels: str,
             scale: float = 1):  # fmt: skip
    family = CounterMetricFamily(name, text, labels=list(labels))
    for key, value in sorted(totals.items()):
        kind, _, rest = key.partition("|")
        values = rest.split("|")
        if kind == prefix and len(values) == len(labels):
            family.add_metric(values, value * scale)
    return family


class BudgetCollector:
    """Every budget's amount, use so far and forecast (R20; issue 36 asks for them as metrics),
    measured from the runs at each scrape as the budget pages measure them. Labels: the budget's
    name and its scope ('project team-a', 'department physics', 'ada in project team-a': a
    user's budget names its user)."""

    GAUGES = (  # (metric, help, BudgetState attribute, scale)
        ("allot_budget_gpu_seconds", "The budget's GPU time per window (absent: no GPU amount).",
         "gpu_hours", 3600),
        ("allot_budget_used_gpu_seconds", "GPU time its runs held in the open window.",
         "used_gpu_hours", 3600),
        ("allot_budget_core_seconds", "The budget's CPU core time per window (absent: none).",
         "core_hours", 3600),
        ("allot_budget_used_core_seconds", "CPU core time its runs held in the open window.",
         "used_core_hours", 3600),
        ("allot_budget_runs_out_timestamp_seconds", "When its GPU time runs out at the last "
         "day's rate (absent: not within the window).", "runs_out_at", None),
    )  # fmt: skip

    def collect(self):
        now = clock.now()  # the portal's clock: the replay clock on a scratch portal
        states = measure_all(Budget.objects.all(), now)
        for name, text, attribute, scale in self.GAUGES:
            family = GaugeMetricFamily(name, text, labels=["budget", "scope"])
            for state in states:
                value = getattr(state, attribute)
                if value is None:
                    continue
                value = value.timestamp() if scale is None else value * scale
                family.add_metric([state.name, state.scope], value)
            yield family


def registry() -> CollectorRegistry:
    """What one scrape exposes: the request histogram and the collectors read at scrape time."""
    scrape = CollectorRegistry(auto_describe=False)
    scrape.register(ProjectCollector())
    scrape.register(CycleCollector())
    scrape.register(AgentCollector())
    scrape.register(BudgetCollector())
    scrape.register(_Requests())
    return scrape


class _Requests:
    def collect(self):
        yield from REQUESTS.collect()


def metrics_view(request: HttpRequest) -> HttpResponse:
    """The exposition, for a bearer token equal to ALLOT_METRICS_TOKEN only."""
    token = settings.ALLOT_METRICS_TOKEN
    if not token:
        raise Http404("metrics are off: ALLOT_METRICS_TOKEN is not set")
    given = request.headers.get("Authorization", "")
    if not given.startswith("Bearer "):
        response = HttpResponse(
            "metrics: an Authorization: Bearer <ALLOT_METRICS_TOKEN> header is required\n",
            status=401, content_type="text/plain",
        )  # fmt: skip
        response["WWW-Authenticate"] = 'Bearer realm="allot-metrics"'
        return response
    if not hmac.compare_digest(given.removeprefix("Bearer ").encode(), token.encode()):
        return HttpResponse(
            "metrics: the bearer token is not ALLOT_METRICS_TOKEN\n", status=403,
            content_type="text/plain",
        )  # fmt: skip
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)


def request_latency(get_response):
    """Middleware: times each request and labels it with its URL pattern's name."""

    def middleware(request: HttpRequest):
        start = perf_counter()
        response = get_response(request)
        match = getattr(request, "resolver_match", None)
        route = (match.view_name if match else "") or "unmatched"
        method = request.method if request.method in METHODS else "other"  # bounded labels
        REQUEST_SECONDS.labels(route, method, str(response.status_code)).observe(
            perf_counter() - start
        )
        return response

    return middleware
