"""What fair share over time (R2.9, E10; issue 23) did to a project's fair share, for its page
and its API: its GPU-hours in the window, plain and decayed, its normalised usage, and its fair
share with and without everyone's usage, in figures and in words.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F, Sum

from portal.core import clock
from portal.jobs.models import ACTIVE, Job, JobRun
from portal.jobs.usage import hours, units_between
from portal.scheduling import snapshot
from portal.scheduling.past_usage import interval, params, runs_in_window, usage_for
from scheduler import Job as CoreJob
from scheduler import Snapshot
from scheduler.queues import build_queues, compute_fair_shares
from scheduler.usage import UsageParams, decayed_gpu_s


@dataclass(frozen=True)
class FairShareOverTime:
    """What a project's past usage did to its fair share, for its page and its API."""

    enabled: bool
    half_life_hours: float
    window_days: float
    k_value: float
    gpu_hours: float  # GPU-hours its runs held inside the window
    decayed_gpu_hours: float  # the same, each hour weighted by its decay
    usage: float  # decayed GPU-hours / what the cluster could have given (0..1)
    fair_share: float  # GPUs, with its usage counted (what the scheduler uses)
    fair_share_without_usage: float  # GPUs, as if nobody had used anything
    summary: str

    def as_dict(self) -> dict:
        """JSON-ready, rounded for people."""
        data = asdict(self)
        for name in ("gpu_hours", "decayed_gpu_hours", "fair_share", "fair_share_without_usage"):
            data[name] = round(data[name], 2)
        data["usage"] = round(self.usage, 4)
        return data


def _held(project: str, now: datetime, usage: UsageParams) -> tuple[float, float]:
    """GPU-hours of the project's runs inside the window, exactly as accounting counts them,
    and the same decayed, in GPU-seconds (one query)."""
    since = now - timedelta(seconds=usage.window_s)
    units, decayed = 0, 0.0  # units: integers, exact (portal.jobs.usage)
    for span in runs_in_window(now, usage.window_s, JobRun.objects.filter(project__name=project)):
        units += units_between(span, since, now)
        run = interval(span)
        decayed += decayed_gpu_s(run.gpus, run.start, run.end, now.timestamp(), usage)
    return hours(units), decayed


def _requests() -> list[CoreJob]:
    """Each project's pending and running GPUs as one job: all the division reads (R2.4)."""
    rows = (
        Job.objects.filter(status__in=ACTIVE)
        .values("project__name")
        .annotate(total=Sum(F("gpus") * F("pods")))
    )
    return [CoreJob(row["project__name"], "~request~", float(row["total"])) for row in rows]


def _cluster() -> tuple[Snapshot, list[CoreJob]]:
    """Nodes, departments and projects as the cycle reads them, and each project's request."""
    nodes = snapshot.load_nodes()
    departments = snapshot.load_departments()
    projects, _ = snapshot.load_projects({d.name for d in departments})
    view = Snapshot(nodes=nodes, projects=projects, departments=departments)
    return view, _requests()


def fair_shares(view: Snapshot, requests: list[CoreJob], usage: dict) -> dict[str, float]:
    """Every project's and department's fair share in GPUs, with this usage (R2, R2.9)."""
    queues = build_queues(view)
    total = sum(round(node.gpus * 1000) for node in view.nodes if node.ready)  # R2.6
    jobs = [job for job in requests if job.project in queues]
    compute_fair_shares(queues, jobs, total, usage, settings.ALLOT_FAIRSHARE_K)
    return {name: queue.fair_share / 1000 for name, queue in queues.items()}


def explain(project: str, now: datetime | None = None) -> FairShareOverTime:
    """What the project's usage over the window did to its fair share, in figures and words."""
    now = now or clock.now()
    usage = params()
    view, requests = _cluster()
    everyone, plain, decayed = {}, 0.0, 0.0  # plain in GPU-hours, decayed in GPU-seconds
    if usage.on:
        everyone = usage_for(view.nodes, view.projects, now, fresh=True)
        plain, decayed = _held(project, now, usage)
    with_usage = fair_shares(view, requests, everyone).get(project, 0.0)
    without = fair_shares(view, requests, {}).get(project, 0.0) if everyone else with_usage
    figures = FairShareOverTime(
        enabled=usage.on,
        half_life_hours=usage.half_life_s / 3600,
        window_days=usage.window_s / 86400,
        k_value=settings.ALLOT_FAIRSHARE_K,
        gpu_hours=plain,
        decayed_gpu_hours=decayed / 3600,
        usage=everyone.get(project, 0.0),
        fair_share=with_usage,
        fair_share_without_usage=without,
        summary="",
    )
    return FairShareOverTime(**{**asdict(figures), "summary": summary(project, figures)})


def _gpus(value: float) -> str:
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return f"{text} GPU" if value == 1 else f"{text} GPUs"


def _duration(hours: float) -> str:
    if hours >= 24 and hours % 24 == 0:
        days = hours / 24
        return f"{days:g} day" if days == 1 else f"{days:g} days"
    return f"{hours:g} hour" if hours == 1 else f"{hours:g} hours"


def summary(project: str, f: FairShareOverTime) -> str:
    """The figures in words a team lead reads at a glance."""
    if not f.enabled:
        return (
            "Fair share over time is off: past usage does not change fair shares; idle GPUs "
            "over quota are divided by over-quota weight alone."
        )
    used = (
        f"In the last {_duration(f.window_days * 24)}, {project} used {f.gpu_hours:,.1f} "
        f"GPU-hours; with recent hours counting most (half-life "
        f"{_duration(f.half_life_hours)}) that is {f.decayed_gpu_hours:,.1f} GPU-hours, "
        f"{f.usage:.0%} of what the whole cluster could have given."
    )
    with_usage, without = _gpus(f.fair_share), _gpus(f.fair_share_without_usage)
    if round(f.fair_share, 3) < round(f.fair_share_without_usage, 3):
        effect = (
            f" Because of it, its fair share is {with_usage} instead of {without}: teams that "
            "used less get idle GPUs over quota first, until its past use fades."
        )
    elif round(f.fair_share, 3) > round(f.fair_share_without_usage, 3):
        effect = f" Other teams used more, so its fair share is {with_usage} instead of {without}."
    else:
        effect = (
            f" Its fair share is {with_usage} either way: its quota covers what it asks for, or "
            "no idle GPUs over quota are contested now."
        )
    return used + effect
