"""Accounting's rules (issue 23) on small cases: interactive runs fill the quota before training
runs, days start at midnight in the portal's time zone (DST included), and the default ranges."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from portal.dashboards import accounting
from portal.jobs.models import Job, JobRun, JobType, Status
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db
T = datetime(2026, 11, 16, tzinfo=UTC)


def run(project, name, gpus, start, end, kind=JobType.TRAIN):
    job = Job.objects.create(project=project, name=name, gpus=gpus, type=kind,
                             status=Status.SUCCEEDED)  # fmt: skip
    JobRun.objects.create(job=job, number=1, started_at=start, ended_at=end, gpus=gpus)


def report(group_by="project", period="day", since="2026-11-16", until="2026-11-17", **extra):
    now = T + timedelta(days=30)
    params = {"group_by": group_by, "period": period, "since": since, "until": until, **extra}
    query, errors = accounting.parse(params, Project.objects.values_list("name", flat=True), now)
    assert not errors
    return accounting.build(query, JobRun.objects.all(), Project.objects.all(), now).as_dict()


def test_an_interactive_run_fills_the_quota_before_an_older_training_run(django_user_model):
    team = Project.objects.create(name="team-a", quota=2)
    run(team, "train", 2, T + timedelta(hours=1), T + timedelta(hours=5))
    run(team, "notebook", 1, T + timedelta(hours=2), T + timedelta(hours=4), JobType.INTERACTIVE)
    for name, user in (("train", "alice"), ("notebook", "bob")):
        account = django_user_model.objects.create_user(user)
        Job.objects.filter(name=name).update(user=account)
        JobRun.objects.filter(job_name=name).update(user=account)  # a run keeps its own copy
    over = {row["user"]: row["over_quota_gpu_hours"] for row in report("user")["totals"]}
    # 3 GPUs on a quota of 2 for 2 hours: the training run's second GPU is the borrowed one
    assert over == {"alice": 2.0, "bob": 0.0}


def test_days_start_at_midnight_in_the_portals_time_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"  # UTC+1 in November, UTC+2 until 25 October
    timezone.deactivate()
    team = Project.objects.create(name="team-a", quota=8)
    # 22:00 to 02:00 UTC is 23:00 to 03:00 in Berlin: 1 hour on the 16th, 3 on the 17th
    run(team, "late", 1, T + timedelta(hours=22), T + timedelta(days=1, hours=2))
    body = report(since="2026-11-16", until="2026-11-17")
    assert body["timezone"] == "Europe/Berlin"
    assert [(r["period"], r["allocated_gpu_hours"]) for r in body["rows"]] == [
        ("2026-11-16", 1.0), ("2026-11-17", 3.0)]  # fmt: skip
    # the day the clocks go back has 25 hours
    autumn = datetime(2026, 10, 24, 22, tzinfo=UTC)  # Sunday 25 October, 00:00 in Berlin
    run(team, "all-day", 1, autumn, autumn + timedelta(hours=30))
    october = report(since="2026-10-25", until="2026-10-25")
    assert [(r["period"], r["allocated_gpu_hours"]) for r in october["rows"]] == [
        ("2026-10-25", 25.0)]  # fmt: skip


def test_the_default_range_is_the_last_seven_days_or_three_months():
    now = datetime(2026, 11, 27, 15, 30, tzinfo=UTC)
    query, _ = accounting.parse({}, [], now)
    assert (query.since, query.until) == (datetime(2026, 11, 21, tzinfo=UTC), now)
    query, _ = accounting.parse({"period": "month"}, [], now)
    assert query.since == datetime(2026, 9, 1, tzinfo=UTC)
    assert [p.label for p in accounting.periods(query.since, now, "month")] == [
        "2026-09", "2026-10", "2026-11"]  # fmt: skip
