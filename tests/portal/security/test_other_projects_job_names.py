"""Texts shown to a project name only that project's jobs (issue 32 item 7): consolidation wrote
"moved to dgx1-1 so team-b/secret-merger-x can start (R11.1)" on team-a's job, read by team-a's
viewers; reclaim and backfill texts are built the same way. Cluster admins see the names."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.test import Client

from portal.jobs.models import Job, JobEvent
from portal.jobs.redaction import ANOTHER, redactor
from portal.jobs.services import record_event

pytestmark = pytest.mark.django_db
MOVED = "moved to dgx1-1 so team-b/secret-merger-x can start (R11.1)"
WAITS = "waits for team-b/secret-merger-x to end (R10.3); 0/4 GPUs free on dgx1-2"


@pytest.fixture
def a_job(api, member, outsider, nodes):
    """team-a/a-job with the texts a move for team-b's job leaves; team-b's job exists."""
    body = {"project": "team-b", "name": "secret-merger-x", "gpus": 1}
    assert api(outsider).post("/api/v1/jobs/", body, format="json").status_code == 201
    body = {"project": "team-a", "name": "a-job", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    job = Job.objects.get(name="a-job")
    record_event(job, "moved", MOVED)
    Job.objects.filter(pk=job.pk).update(pending_reason=WAITS)
    return job


def _said(api, user) -> str:
    client = api(user)
    return json.dumps([client.get("/api/v1/jobs/team-a/a-job/events/").json(),
                       client.get("/api/v1/jobs/team-a/a-job/").json()])  # fmt: skip


@pytest.mark.parametrize("persona", ["viewer", "member"])
def test_team_as_people_read_another_projects_job_and_no_name(api, a_job, request, persona):
    user = request.getfixturevalue(persona)
    said = _said(api, user)
    assert "secret-merger-x" not in said
    assert f"so {ANOTHER} can start (R11.1)" in said and "0/4 GPUs free" in said
    browser = Client()
    browser.force_login(user)
    page = browser.get("/jobs/team-a/a-job/").content.decode()
    assert "secret-merger-x" not in page and ANOTHER in page.replace("&#x27;", "'")
    listing = browser.get("/jobs/?project=team-a").content.decode()
    assert "secret-merger-x" not in listing
    from portal.dashboards.overview import build_overview

    assert "secret-merger-x" not in json.dumps(build_overview(user), default=str)


def test_a_cluster_admin_reads_the_names(api, a_job, cluster_admin):
    said = _said(api, cluster_admin)
    assert "team-b/secret-merger-x" in said


def test_a_notification_to_team_a_names_no_team_b_job(a_job):
    from portal.notify.dispatch import payload_of

    event = JobEvent.objects.get(job=a_job, kind="moved")
    assert payload_of(event)["message"] == f"moved to dgx1-1 so {ANOTHER} can start (R11.1)"


def test_the_cli_shows_team_a_no_team_b_job(a_job, member, live_server, tmp_path):
    import os

    from portal.tenancy.services import issue_token
    from tests.paths import ROOT

    env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(member, "t")[1],
               ALLOT_CONFIG=str(tmp_path / "c.json"))  # fmt: skip
    command = [sys.executable, "-m", "cli", "describe", "a-job", "-p", "team-a"]
    shown = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    assert "secret-merger-x" not in shown.stdout and ANOTHER in shown.stdout


def test_only_real_job_references_of_hidden_projects_are_replaced():
    redact = redactor({"team-a"}, ["team-a", "team-b"])
    assert redact("so team-a/own can start; team-b/x waits; 0/4 GPUs; a/b") == (
        f"so team-a/own can start; {ANOTHER} waits; 0/4 GPUs; a/b"
    )
    assert redactor(None, ["team-b"])("team-b/x") == "team-b/x"
