"""`allot usage` (issue 23): the scripted week's GPU-hours per project, user and day, as the API
counts them, printed like Slurm's sreport; CSV as the API streams it; a bad date said plainly."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT
from tests.portal.dashboards.accounting_week import ALLOCATED, BY_USER, UNTIL, make_week

pytestmark = pytest.mark.django_db(transaction=True)
WEEK = ("--since", "2026-11-16", "--until", UNTIL)


@pytest.fixture
def usage(live_server, tmp_path):
    """`usage(username, *args)` -> CompletedProcess of `allot usage *args` as that user."""
    users = make_week()

    def run(username: str, *args: str) -> subprocess.CompletedProcess:
        env = dict(os.environ, ALLOT_URL=live_server.url,
                   ALLOT_TOKEN=issue_token(users[username], "test")[1],
                   ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
        return subprocess.run([sys.executable, "-m", "cli", "usage", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    return run


def table(stdout: str) -> dict[str, list[str]]:
    """{first column: the other columns} of the printed table (after the heading line)."""
    lines = stdout.splitlines()[2:]
    return {line.split()[0]: line.split()[1:] for line in lines if line.strip()}


def test_it_prints_each_projects_and_users_gpu_hours(usage):
    done = usage("root", *WEEK)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("GPU-hours 2026-11-16T00:00 to 2026-11-23T00:00 (UTC)")
    rows = table(done.stdout)
    assert {name: rows[name][0] for name in ALLOCATED} == {
        name: f"{hours:.2f}" for name, hours in ALLOCATED.items()
    }
    assert rows["team-a"][1:3] == ["not", "measured"] and rows["team-a"][-2:] == ["4.00", "7"]
    assert rows["TOTAL"][0] == f"{sum(ALLOCATED.values()):.2f}"
    by_user = table(usage("bob", *WEEK, "--by", "user").stdout)
    assert {name: row[0] for name, row in by_user.items()} == {
        "alice": f"{BY_USER['alice']:.2f}", "bob": f"{BY_USER['bob']:.2f}",
        "TOTAL": f"{BY_USER['alice'] + BY_USER['bob']:.2f}",
    }  # fmt: skip


def test_per_day_and_csv(usage):
    days = usage("root", *WEEK, "--per", "day", "-p", "team-a").stdout.splitlines()
    assert days[1].split()[:3] == ["PERIOD", "PROJECT", "ALLOCATED"]
    assert days[2].split()[:3] == ["2026-11-16", "team-a", "18.00"]
    done = usage("eve", *WEEK, "--csv", "--by", "user")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("period,start,end,user,allocated_gpu_hours")
    assert lines[-1].startswith("total,") and ",eve,7.0," in lines[-1]
    assert "alice" not in done.stdout


def test_a_bad_date_is_said_plainly(usage):
    done = usage("root", "--since", "last week")
    assert done.returncode == 1
    assert done.stderr.startswith("Error: since: must be a date") and "Traceback" not in done.stderr
