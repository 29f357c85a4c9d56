# ruff: noqa: F811 (the fixtures imported from test_session_proxy are used as arguments)
"""The steps a Jupyter session shows on its job's page while it starts, and their JSON (issue 24
item 1): always a 200 for those who may open the session, the same 404/403 as the proxy for
others, and a lab that answers while the job still says ContainerCreating asks for a cycle."""

import pytest
from django.test import Client

from portal.jobs.models import Job, Status
from tests.portal.web.test_session_proxy import (  # noqa: F401 (fixtures)
    agents_session,
    browser,
    notebook,
    pod_notebook,
)

pytestmark = pytest.mark.django_db
PROGRESS = "/jobs/team-a/nb/session/"


def states(answer) -> dict[str, str]:
    return {step["key"]: step["state"] for step in answer["steps"]}


def test_a_pending_session_is_queued_and_says_why(notebook, member):
    Job.objects.filter(name="nb").update(pending_reason="team-a is at its quota (R3.1)")
    response = browser(member).get(PROGRESS)
    answer = response.json()
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    assert states(answer) == {"queued": "active", "placed": "todo", "server": "todo",
                              "lab": "todo"}  # fmt: skip
    assert answer["steps"][0]["detail"] == "team-a is at its quota (R3.1)"
    assert (answer["status"], answer["answering"], answer["ended"]) == ("Pending", False, "")
    assert answer["lab"] == "/sessions/team-a/nb/lab"


def test_a_placed_session_whose_server_answers_is_done_and_asks_for_a_cycle(
    notebook, member, agents_session, monkeypatch
):
    asked = []
    monkeypatch.setattr("portal.web.session_steps.trigger.request_cycle", lambda: asked.append(1))
    Job.objects.filter(name="nb").update(status=Status.CONTAINER_CREATING)
    answer = browser(member).get(PROGRESS).json()
    assert answer["answering"] and set(states(answer).values()) == {"done"}
    assert answer["steps"][1]["detail"] == "dgx1-1 GPU 0 (0.5)"
    assert asked == [1]  # the job says Running at the cycle this asks for, not at the next tick
    Job.objects.filter(name="nb").update(status=Status.RUNNING)
    assert browser(member).get(PROGRESS).json()["answering"] and asked == [1]


def test_a_running_job_whose_server_does_not_answer_is_starting(notebook, member, monkeypatch):
    from agents.simulated import SimulatedAgent

    monkeypatch.setattr("portal.scheduling.agent._agent", SimulatedAgent(sessions=None))
    Job.objects.filter(name="nb").update(status=Status.RUNNING, placement=[
        {"node": "dgx1-2", "devices": [3], "share": 1.0}])  # fmt: skip
    answer = browser(member).get(PROGRESS).json()
    assert states(answer) == {"queued": "done", "placed": "done", "server": "active",
                              "lab": "todo"}  # fmt: skip
    assert answer["steps"][1]["detail"] == "dgx1-2 GPU 3" and not answer["answering"]


def test_a_session_that_ended_says_so(notebook, member):
    from portal.jobs.models import JobEvent

    job = Job.objects.get(name="nb")
    Job.objects.filter(pk=job.pk).update(status=Status.FAILED)
    JobEvent.objects.create(job=job, project=job.project, time=job.submitted_at, kind="failed",
                            message="the Jupyter server exited: boom")  # fmt: skip
    answer = browser(member).get(PROGRESS).json()
    assert answer["ended"] == "The job is Failed: the Jupyter server exited: boom"
    assert 'id="session-steps"' not in browser(member).get("/jobs/team-a/nb/").content.decode()


def test_only_those_who_may_open_the_session_see_its_progress(notebook, outsider, viewer):
    assert Client().get(PROGRESS).status_code == 302  # to sign in
    assert browser(outsider).get(PROGRESS).status_code == 404
    assert browser(viewer).get(PROGRESS).status_code == 403


def test_launch_jupyter_leads_to_the_jobs_page_which_opens_the_lab_when_it_answers(member, nodes):
    client = browser(member)
    response = client.post("/jupyter/new/", {"project": "team-a", "gpus": "0.5"})
    assert response.status_code == 302 and response.url == "/jobs/team-a/jupyter-bob/"
    page = client.get(response.url).content.decode()
    assert 'data-open="/sessions/team-a/jupyter-bob/lab"' in page
    assert 'data-progress="/jobs/team-a/jupyter-bob/session/"' in page
    assert "JupyterLab opens here as soon as it answers." in page


def test_a_launched_lab_that_answers_already_is_opened_at_once(notebook, member, agents_session):
    client = browser(member)
    session = client.session  # what a launch leaves there (portal.web.sessions.open_later)
    session["allot-open:team-a/nb"] = "/sessions/team-a/nb/lab"
    session.save()
    response = client.get("/jobs/team-a/nb/")
    assert response.status_code == 302 and response["Location"] == "/sessions/team-a/nb/lab"
    assert 'id="session-steps"' not in client.get("/jobs/team-a/nb/").content.decode()
