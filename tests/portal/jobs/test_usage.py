"""GPU-hours of runs between two times (`portal.jobs.usage`): a run cut at midnight adds up to
the whole run exactly, a run going on counts to `now`, nothing outside the range counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from portal.jobs.models import Job, JobRun, Status
from portal.jobs.usage import cut, gpu_hours_by_project, hours, spans, units_between
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db
T = datetime(2026, 11, 16, tzinfo=UTC)  # a Monday, midnight


def run(project: Project, name: str, gpus: float, start: datetime, end: datetime | None):
    job = Job.objects.create(project=project, name=name, gpus=gpus, status=Status.SUCCEEDED)
    return JobRun.objects.create(job=job, number=1, started_at=start, ended_at=end, gpus=gpus)


def test_a_run_cut_at_midnight_adds_up_to_the_whole_run_exactly():
    team = Project.objects.create(name="team-a", quota=4)
    # 0.3 GPUs from 21:17:03.123457 to 02:41:59.000001 the next day
    whole = run(
        team,
        "late",
        0.3,
        T + timedelta(hours=21, minutes=17, seconds=3.123457),
        T + timedelta(days=1, hours=2, minutes=41, seconds=59, microseconds=1),
    )
    [span] = spans(JobRun.objects.all(), T, T + timedelta(days=2), now=T + timedelta(days=3))
    pieces = dict(cut(span, [T, T + timedelta(days=1), T + timedelta(days=2)]))
    assert set(pieces) == {0, 1}
    assert pieces[0] + pieces[1] == units_between(span, T, T + timedelta(days=2))
    assert pieces[0] == 300 * ((2 * 3600 + 42 * 60 + 56) * 1_000_000 + 876_543)
    assert hours(pieces[0] + pieces[1]) == pytest.approx(whole.gpu_hours(T), rel=1e-15)


def test_a_running_run_counts_to_now_and_nothing_outside_the_range_counts():
    team = Project.objects.create(name="team-a", quota=4)
    other = Project.objects.create(name="team-b", quota=2)
    run(team, "going", 2, T + timedelta(hours=22), None)
    run(team, "before", 1, T - timedelta(hours=5), T - timedelta(hours=1))
    run(other, "half", 0.5, T + timedelta(hours=23), T + timedelta(hours=25))
    now = T + timedelta(days=1, hours=1, minutes=30)
    by_project = gpu_hours_by_project(JobRun.objects.all(), T, T + timedelta(days=1), now)
    assert by_project == {"team-a": 4.0, "team-b": 0.5}
    assert gpu_hours_by_project(JobRun.objects.all(), T, now, now) == {"team-a": 7.0, "team-b": 1.0}
