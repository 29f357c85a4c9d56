"""`allot stop`, `allot resume`, `allot delete` and `allot list --all` against a live portal."""

from __future__ import annotations

import json

import pytest

from portal.jobs.models import Job, Status
from tests.cli.test_allot_command import allot, settle  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def statuses(listed: str) -> dict[str, str]:
    return {line.split()[0]: line.split()[1] for line in listed.splitlines()[1:] if line.strip()
            and not line[0].isdigit() and line.split()[0] != "NAME"}  # fmt: skip


def test_stop_keeps_the_job_resume_queues_it_and_delete_removes_it(allot):  # noqa: F811
    assert allot("project", "set", "team-a").returncode == 0
    assert allot("submit", "train-1", "-g", "1").returncode == 0
    settle()
    stopped = allot("stop", "train-1")
    assert stopped.returncode == 0 and "has been stopped" in stopped.stdout, stopped.stderr
    assert statuses(allot("list").stdout)["train-1"] == "Stopped"  # kept, not ended history
    again = allot("stop", "train-1")
    assert again.returncode == 1 and "is Stopped" in again.stderr
    taken = allot("submit", "train-1", "-g", "1")
    assert taken.returncode == 1 and "already exists" in taken.stderr  # the name stays taken
    resumed = allot("resume", "train-1")
    assert resumed.returncode == 0 and "resumed (Pending)" in resumed.stdout
    settle()
    assert json.loads(allot("get", "train-1", "--json").stdout)["status"] == "Running"
    assert allot("delete", "train-1").returncode == 0
    assert allot("get", "train-1").returncode == 1


def test_list_shows_what_has_not_ended_and_all_adds_the_history(allot):  # noqa: F811
    assert allot("project", "set", "team-a").returncode == 0
    for name in ("done-1", "done-2", "live"):
        assert allot("submit", name, "-g", "1").returncode == 0
    Job.objects.filter(name__startswith="done").update(status=Status.SUCCEEDED)
    assert set(statuses(allot("list").stdout)) == {"live"}
    everything = allot("list", "--all")
    assert set(statuses(everything.stdout)) == {"done-1", "done-2", "live"}, everything.stdout
    newest = allot("list", "--all", "--limit", "1")
    assert "the newest 1 of 3" in newest.stderr, newest.stderr
    failed = json.loads(allot("list", "--all", "--status", "Succeeded", "--json").stdout)
    assert {job["name"] for job in failed} == {"done-1", "done-2"}
    bad = allot("list", "--all", "--since", "last week")
    assert bad.returncode == 1 and "since" in bad.stderr and "Traceback" not in bad.stderr
