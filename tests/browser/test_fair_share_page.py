"""Fair share over time in Chromium (R2.9, E10; issue 23): with ALLOT_FAIRSHARE_HALF_LIFE set, a
team lead opens their project's page and reads what the team's heavy use yesterday did to its
fair share today, against an idle team with the same quota and weight."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, JobRun, Status
from portal.jobs.services import submit_job
from portal.tenancy.models import Membership, Project
from tests.browser.conftest import PASSWORD, sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

SERVER_ENV = {"ALLOT_FAIRSHARE_HALF_LIFE": "12h", "ALLOT_FAIRSHARE_WINDOW": "7d"}


def _contest() -> None:
    """One 8-GPU node; team-a held it from 30 to 6 hours ago; both teams (quota 1) ask for 8."""
    Node.objects.create(name="dgx1-1", gpus=8)
    teams = {
        name: Project.objects.create(name=name, quota=Decimal(1)) for name in ("team-a", "team-b")
    }
    lead = get_user_model().objects.create_user(username="lead", password=PASSWORD)
    Membership.objects.create(user=lead, project=teams["team-a"], role="viewer")
    now = timezone.now()
    start, end = now - timedelta(hours=30), now - timedelta(hours=6)
    job = Job.objects.create(project=teams["team-a"], name="yesterday", gpus=8,
                             status=Status.SUCCEEDED, started_at=start,
                             finished_at=end)  # fmt: skip
    JobRun.objects.create(job=job, number=1, started_at=start, ended_at=end, gpus=8,
                          end="completed")  # fmt: skip
    for i in range(8):
        for name, team in teams.items():
            submit_job(None, team, name=f"{name[-1]}-{i}", gpus=Decimal(1))


def test_a_team_lead_reads_what_yesterdays_usage_did_to_the_share(page, server, artifacts):
    _contest()
    sign_in(page, server, "lead")
    page.goto(server.url + "/projects/team-a/")
    card = page.locator("#fair-share-over-time")
    expect(card).to_contain_text("team-a used 192.0 GPU-hours")
    expect(card).to_contain_text("its fair share is 3 GPUs instead of 4 GPUs")
    expect(page.locator("#fairshare-usage")).to_have_text("53%")
    expect(page.locator("#fairshare-share")).to_have_text(
        "3 GPUs; 4 GPUs if past usage did not count"
    )
    card.screenshot(path=artifacts / "fair-share-over-time.png")
