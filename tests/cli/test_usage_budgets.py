"""`allot usage` shows the budgets left (issue 36): each budget one may see, what its window used
of how much, what is left and when it runs out at the current burn rate (GET /api/v1/budgets/)."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.budgets.models import Budget
from portal.jobs.models import Job, JobRun, Status
from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def test_allot_usage_shows_the_budgets_left(live_server, tmp_path, member, outsider, team_a):
    now = timezone.now()
    job = Job.objects.create(project=team_a, name="j", gpus=4, status=Status.SUCCEEDED)
    JobRun.objects.create(job=job, number=1, gpus=4, started_at=now - timedelta(hours=3),
                          ended_at=now - timedelta(hours=2))  # fmt: skip
    Budget.objects.create(name="monthly", project=team_a, gpu_hours=10, kind="hard",
                          window="rolling", rolling_days=30)  # fmt: skip

    def usage(user) -> subprocess.CompletedProcess:
        env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(user, "t")[1],
                   ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
        return subprocess.run([sys.executable, "-m", "cli", "usage"], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    done = usage(member)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("Budgets left (GPU-hours of each budget's current window):")
    assert lines[at + 1].split()[:3] == ["BUDGET", "SCOPE", "WINDOW"]
    row = lines[at + 2].split()
    assert row[:9] == ["monthly", "team-a", "30", "days", "hard", "(wait)", "4.00", "10.00",
                       "6.00"]  # fmt: skip
    assert row[9] == "40%"
    assert "Budgets left" not in usage(outsider).stdout
