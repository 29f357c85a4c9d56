"""A scripted week of runs at fixed timestamps, for the accounting tests (API, CSV, page).

Monday 2026-11-16 to Sunday 2026-11-22, UTC. Every run holds a multiple of 0.25 GPUs for a
multiple of 15 minutes, so every GPU-hour figure is a multiple of 1/16: exact in binary floating
point, and sums of them are exact too.

- physics (department): team-a (quota 4: alice, bob; vera a viewer) and team-b (quota 2: eve)
- team-c (quota 1, no department): dave
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from django.contrib.auth import get_user_model

from portal.jobs.models import Job, JobRun, JobType, RunEnd, Status
from portal.tenancy.models import Department, Membership, Project

MONDAY = datetime(2026, 11, 16, tzinfo=UTC)
UNTIL = "2026-11-22"
PASSWORD = "x-test-pass-1"  # a bare date: through Sunday, i.e. until Monday 23 00:00


def at(day: int, hour: float) -> datetime:
    """`day` 0 = Monday, at `hour` (15-minute steps)."""
    return MONDAY + timedelta(days=day, hours=hour)


# (project, job, user, gpus per pod, pods, type, status, runs: (start, end or None, end kind))
SCRIPT = [
    ("team-a", "a-train", "alice", 2, 1, "train", "Succeeded",
     [(at(0, 10), at(0, 14), "completed")]),
    # 2 pods x 2 GPUs, across Monday midnight
    ("team-a", "b-overnight", "bob", 2, 2, "train", "Succeeded",
     [(at(0, 22), at(1, 3.5), "completed")]),
    # newer than b-overnight while team-a holds 6 GPUs on a quota of 4: over quota, all of it
    ("team-a", "a-big", "alice", 2, 1, "train", "Succeeded", [(at(0, 23), at(1, 1), "completed")]),
    ("team-a", "b-frac", "bob", 0.25, 1, "interactive", "Stopped",
     [(at(1, 9), at(1, 17), "stopped")]),
    # evicted by a reclaim, then ran again across Wednesday midnight
    ("team-a", "a-evicted", "alice", 3, 1, "train", "Succeeded",
     [(at(2, 8), at(2, 9.5), "evicted"), (at(2, 12), at(3, 0.75), "completed")]),
    # still running since Sunday 20:00
    ("team-a", "b-running", "bob", 1, 1, "train", "Running", [(at(6, 20), None, "")]),
    ("team-b", "e-half", "eve", 1.5, 1, "train", "Succeeded",
     [(at(3, 10), at(3, 14), "completed")]),
    # team-b holds 2.5 GPUs on a quota of 2 from 12:00 to 13:00: e-more is over by 0.5
    ("team-b", "e-more", "eve", 1, 1, "train", "Succeeded",
     [(at(3, 12), at(3, 13), "completed")]),
    ("team-c", "d-late", "dave", 0.5, 1, "train", "Succeeded",
     [(at(4, 23.5), at(5, 0.5), "completed")]),
]  # fmt: skip

# What the script adds up to over the week (until Monday 23 00:00), by hand
ALLOCATED = {"team-a": 8 + 22 + 4 + 2 + 4.5 + 38.25 + 4, "team-b": 7.0, "team-c": 0.5}
BY_USER = {"alice": 8 + 4 + 4.5 + 38.25, "bob": 22 + 2 + 4, "eve": 7.0, "dave": 0.5}
TEAM_A_DAYS = {"2026-11-16": 8 + 8 + 2, "2026-11-17": 14 + 2 + 2, "2026-11-18": 4.5 + 36,
               "2026-11-19": 2.25, "2026-11-22": 4.0}  # fmt: skip
OVER_QUOTA = {"team-a": 4.0, "team-b": 0.5, "team-c": 0.0}
BY_DEPARTMENT = {"physics": ALLOCATED["team-a"] + ALLOCATED["team-b"], None: 0.5}


def make_week() -> dict:
    """The projects, users and runs of SCRIPT; {username: user}."""
    physics = Department.objects.create(name="physics", quota=6)
    projects = {
        "team-a": Project.objects.create(name="team-a", quota=4, department=physics),
        "team-b": Project.objects.create(name="team-b", quota=2, department=physics),
        "team-c": Project.objects.create(name="team-c", quota=1),
    }
    accounts = get_user_model().objects
    users = {"root": accounts.create_user("root", password=PASSWORD, is_staff=True)}
    for name, project, role in (("alice", "team-a", "admin"), ("bob", "team-a", "researcher"),
                                ("vera", "team-a", "viewer"), ("eve", "team-b", "researcher"),
                                ("dave", "team-c", "researcher")):  # fmt: skip
        users[name] = accounts.create_user(name, password=PASSWORD)
        Membership.objects.create(user=users[name], project=projects[project], role=role)
    for project, name, user, gpus, pods, kind, status, runs in SCRIPT:
        job = Job.objects.create(project=projects[project], name=name, user=users[user], gpus=gpus,
                                 pods=pods, type=JobType(kind), status=Status(status),
                                 started_at=runs[-1][0], finished_at=runs[-1][1])  # fmt: skip
        for number, (start, end, how) in enumerate(runs, start=1):
            by = "team-b's reclaim" if how == "evicted" else ""
            JobRun.objects.create(job=job, number=number, started_at=start, ended_at=end,
                                  gpus=gpus * pods, end=RunEnd(how), ended_by=by)  # fmt: skip
    return users


def runs_sum(now: datetime, until: datetime | None = None, **filters) -> float:
    """The GPU-hours of the matching runs as the job pages count them (`JobRun.gpu_hours`),
    each run cut at `until` if given."""
    total = 0.0
    for run in JobRun.objects.filter(**filters):
        if until is not None and (run.ended_at is None or run.ended_at > until):
            run.ended_at = until
        total += run.gpu_hours(now)
    return total
