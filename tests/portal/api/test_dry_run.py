"""`POST /api/v1/jobs/?dry_run=true` (issue 34 item 2): what the next scheduling cycle would do
with the job on today's state - whom it would preempt, with the scheduler's reasons - and
nothing stored. Launching a notebook of 2 GPUs in team-a evicted a teammate's training job
without a word; now the answer names it first."""

from __future__ import annotations

import pytest

from agents.simulated import SimulatedAgent
from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from portal.scheduling.settle import settle

pytestmark = pytest.mark.django_db(transaction=True)
URL = "/api/v1/jobs/?dry_run=true"


def running(project, user, name: str, gpus: int) -> Job:
    """A training job of `user` started by the cycles of a simulated cluster."""
    submit_job(user, project, name=name, gpus=gpus)
    assert settle(SimulatedAgent(start_delay_s=0))[1]
    job = Job.objects.get(project=project, name=name)
    assert job.status == Status.RUNNING
    return job


@pytest.fixture
def one_node(db):
    return Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default")


def test_a_notebook_names_the_teammates_job_it_would_preempt(api, one_node, member, owner,
                                                           team_a):  # fmt: skip
    running(team_a, member, "a-job4", 8)  # bob's, over team-a's quota of 4
    body = {"project": "team-a", "name": "nb-big", "gpus": 2, "type": "interactive"}
    response = api(owner).post(URL, body, format="json")
    assert response.status_code == 200, response.content
    answer = response.json()
    assert answer["dry_run"] is True and answer["would_start"] is True  # in a-job4's place
    [preempted] = answer["would_preempt"]
    assert (preempted["job"], preempted["user"], preempted["gpus"], preempted["action"]) == (
        "team-a/a-job4", "bob", 8, "evict")  # fmt: skip
    assert "nb-big of team-a has higher priority" in preempted["reason"]
    assert not Job.objects.filter(name="nb-big").exists()  # nothing stored
    assert Job.objects.get(name="a-job4").status == Status.RUNNING


def test_another_projects_job_is_not_named(api, one_node, member, outsider, team_a, team_b):
    running(team_b, outsider, "b-secret", 8)  # team-b over its quota of 2
    response = api(member).post(URL, {"project": "team-a", "name": "mine", "gpus": 4},
                                format="json")  # fmt: skip
    [reclaimed] = response.json()["would_preempt"]
    assert reclaimed["job"] == "another project's job"
    assert "b-secret" not in str(response.json())


def test_a_job_with_room_preempts_nobody(api, one_node, member):
    response = api(member).post(URL, {"project": "team-a", "name": "fits", "gpus": 2},
                                format="json")  # fmt: skip
    assert response.json() == {"dry_run": True, "would_start": True, "would_preempt": [],
                               "pending_reason": "", "warnings": []}  # fmt: skip
    assert not Job.objects.exists()


def test_a_dry_run_says_what_the_submission_would_refuse(api, one_node, member, team_a):
    submit_job(member, team_a, name="taken", gpus=1)
    response = api(member).post(URL, {"project": "team-a", "name": "taken", "gpus": 1},
                                format="json")  # fmt: skip
    assert response.status_code == 409 and "already exists" in str(response.json()["name"])
    bad = api(member).post("/api/v1/jobs/?dry_run=maybe", {"project": "team-a", "name": "x",
                                                            "gpus": 1}, format="json")  # fmt: skip
    assert bad.status_code == 400 and "must be true or false" in bad.json()["dry_run"][0]
