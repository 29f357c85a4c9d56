"""The demo (issue 34 item 14): with ALLOT_SIM_DEMO a simulated training job given no
sim_duration_s finishes after a run time drawn from the Philly trace, so a new install soon shows
Succeeded jobs and history; notebooks and jobs that name their duration are not affected."""

from __future__ import annotations

import time

import pytest

from agents.demo_durations import MIN_S, PERCENTILES_S, demo_duration_s
from portal.jobs.models import Job, Status
from portal.scheduling.agent import job_spec

pytestmark = pytest.mark.django_db


def _submit(api, member, **fields):
    body = {"project": "team-a", "gpus": 1, **fields}
    answer = api(member).post("/api/v1/jobs/", body, format="json")
    assert answer.status_code == 201, answer.content
    return Job.objects.get(name=fields["name"])


def test_a_training_job_runs_for_a_philly_duration_only_in_the_demo(api, member, nodes, settings):
    job = _submit(api, member, name="t1")
    assert job_spec(job).sim_duration_s is None  # not the demo: until stopped
    settings.ALLOT_SIM_DEMO, settings.ALLOT_SIM_DEMO_SCALE = True, 1 / 60
    drawn = job_spec(job).sim_duration_s
    assert drawn == job_spec(Job.objects.get(pk=job.pk)).sim_duration_s  # every process agrees
    assert MIN_S <= drawn <= PERCENTILES_S[-1] / 60
    named = _submit(api, member, name="t2", sim_duration_s=30)
    assert job_spec(named).sim_duration_s == 30
    notebook = _submit(api, member, name="nb", type="interactive", gpus=0.5, ports=[8888])
    assert job_spec(notebook).sim_duration_s is None


def test_the_draws_follow_the_trace():
    draws = sorted(demo_duration_s(job_id, 1.0) for job_id in range(1, 2001))
    median = draws[len(draws) // 2]
    assert PERCENTILES_S[45] <= median <= PERCENTILES_S[55]  # the trace's median, 973 s
    assert draws[int(0.9 * len(draws))] > 10 * median  # and its long tail


def test_in_the_demo_a_training_job_ends_succeeded(api, member, nodes, settings):
    from portal.scheduling.settle import settle

    settings.ALLOT_SIM_DEMO, settings.ALLOT_SIM_DEMO_SCALE = True, 1e-6  # MIN_S, 5 s
    settings.ALLOT_SIM_START_DELAY_S = 0
    job = _submit(api, member, name="t1")
    settle()
    assert Job.objects.get(pk=job.pk).status == Status.RUNNING
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Job.objects.get(pk=job.pk).status == Status.RUNNING:
        time.sleep(0.5)
        settle()
    assert Job.objects.get(pk=job.pk).status == Status.SUCCEEDED
