"""`allot what-if` (issue 37): a cluster admin previews a quota raise and a drain from the
command line and reads each project's start moves and the jobs stopped now; a bad change is
the API's 400 naming the field; a researcher is refused; nothing is changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from portal.jobs.models import Job, Status
from portal.tenancy.models import Project
from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT
from tests.portal.api.test_whatif_api import busy  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def allot(live_server, tmp_path):
    def run(user, *args) -> subprocess.CompletedProcess:
        env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(user, "t")[1],
                   ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
        return subprocess.run([sys.executable, "-m", "cli", "what-if", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=120)  # fmt: skip

    return run


def test_allot_what_if_prints_each_project_s_starts_and_the_jobs_stopped(
    allot,
    cluster_admin,
    member,
    busy,  # noqa: F811
):
    done = allot(cluster_admin, "--quota", "team-a=12", "--drain", "dgx1-2", "--hours", "4")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["PROJECT", "PENDING", "STOPPED", "FIRST", "FIRST", "AFTER",
                                "ALL", "ALL", "AFTER"]  # fmt: skip
    rows = {line.split()[0]: line.split() for line in lines[1:3]}
    assert rows["team-a"][1:3] == ["1", "1"] and rows["team-b"][1:3] == ["1", "1"]
    assert rows["team-a"][4] == "now"  # the quota raise starts a-wait at once
    assert "Stopped now: 2 job(s)" in done.stdout
    assert "team-a/a-run: stopped: its node dgx1-2 is drained (what-if)" in done.stdout
    assert Project.objects.get(name="team-a").quota == 4
    assert Job.objects.get(name="a-run").status == Status.RUNNING
    as_json = json.loads(allot(cluster_admin, "--drain", "dgx1-1", "--json").stdout)
    assert [p["job"] for p in as_json["preempted"]] == ["b-run"]


def test_allot_what_if_refuses_a_bad_change_and_a_researcher(allot, cluster_admin, member, busy):  # noqa: F811
    done = allot(cluster_admin, "--quota", "team-z=3")
    assert done.returncode != 0 and "project" in done.stderr and "team-z" in done.stderr
    done = allot(cluster_admin, "--quota", "team-a=lots")
    assert done.returncode != 0 and "--quota" in done.stderr
    done = allot(member, "--drain", "dgx1-1")
    assert done.returncode != 0 and "cluster admins" in done.stderr
