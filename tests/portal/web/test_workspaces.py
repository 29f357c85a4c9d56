"""Issue 23: deleting a persistent workspace is an explicit, confirmed action of its owner (or a
cluster admin), through the REST API or /me/workspaces/, refused while a Jupyter job uses it."""

from __future__ import annotations

import pytest
from django.utils import timezone

from agents.simulated import SimulatedAgent
from portal.jobs.models import Job, Status
from portal.scheduling import agent as agent_module

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions(make_sessions, monkeypatch):
    """The portal's agent with local sessions; bob has a workspace in team-a with a file."""
    sessions = make_sessions(single_user=True)
    monkeypatch.setattr(agent_module, "_agent", SimulatedAgent(sessions=sessions))
    return sessions


def give_workspace(sessions, project: str, user: str) -> None:
    home = sessions.workspace(project, user)
    home.mkdir(parents=True)
    (home / "notes.txt").write_text("kept")


def notebook(project, user, status=Status.RUNNING) -> Job:
    return Job.objects.create(project=project, user=user, name=f"jupyter-{user.username}",
                              type="interactive", gpus=0.5, ports=[8888], status=status,
                              started_at=timezone.now())  # fmt: skip


def test_the_api_lists_your_workspaces_and_deletes_one(api, member, sessions):
    give_workspace(sessions, "team-a", "bob")
    give_workspace(sessions, "team-b", "eve")
    assert api(member).get("/api/v1/me/workspaces/").json() == [
        {"project": "team-a", "user": "bob"}
    ]
    assert api(member).delete("/api/v1/workspaces/team-a/bob/").status_code == 204
    assert not sessions.workspace("team-a", "bob").exists()
    assert api(member).get("/api/v1/me/workspaces/").json() == []
    answer = api(member).delete("/api/v1/workspaces/team-a/bob/")
    assert answer.status_code == 404 and "no workspace" in answer.json()["detail"]


def test_only_the_owner_or_a_cluster_admin_deletes_a_workspace(
    api, member, outsider, owner, cluster_admin, sessions
):
    give_workspace(sessions, "team-a", "bob")
    for intruder in (outsider, owner):  # another team's researcher, even bob's project admin
        assert api(intruder).delete("/api/v1/workspaces/team-a/bob/").status_code == 404
    assert sessions.workspace("team-a", "bob").is_dir()
    assert api().delete("/api/v1/workspaces/team-a/bob/").status_code == 401
    assert api(cluster_admin).delete("/api/v1/workspaces/team-a/bob/").status_code == 204


def test_a_workspace_a_running_jupyter_job_uses_is_kept_with_a_409(api, member, team_a, sessions):
    give_workspace(sessions, "team-a", "bob")
    job = notebook(team_a, member)
    answer = api(member).delete("/api/v1/workspaces/team-a/bob/")
    assert answer.status_code == 409
    assert answer.json() == {"workspace": ["Jupyter job jupyter-bob uses it: stop it first"]}
    assert (sessions.workspace("team-a", "bob") / "notes.txt").read_text() == "kept"
    job.status = Status.SUCCEEDED
    job.save()
    assert api(member).delete("/api/v1/workspaces/team-a/bob/").status_code == 204


def test_the_page_deletes_only_once_the_project_name_is_typed(client, member, team_a, sessions):
    give_workspace(sessions, "team-a", "bob")
    client.force_login(member)
    page = client.get("/me/workspaces/")
    assert page.status_code == 200 and b'data-workspace="team-a"' in page.content
    assert b"/me/workspaces/" in client.get("/me/").content  # found from the user's page
    unconfirmed = client.post("/me/workspaces/", {"project": "team-a", "confirm": "team"})
    assert unconfirmed.status_code == 400 and b"Type team-a to confirm" in unconfirmed.content
    assert sessions.workspace("team-a", "bob").is_dir()
    notebook(team_a, member)
    busy = client.post("/me/workspaces/", {"project": "team-a", "confirm": "team-a"})
    assert busy.status_code == 409 and b"jupyter-bob uses it: stop it first" in busy.content
    Job.objects.update(status=Status.SUCCEEDED)
    done = client.post("/me/workspaces/", {"project": "team-a", "confirm": "team-a"}, follow=True)
    assert b"Your workspace in team-a was deleted." in done.content
    assert not sessions.workspace("team-a", "bob").exists()
    gone = client.post("/me/workspaces/", {"project": "team-a", "confirm": "team-a"})
    assert gone.status_code == 404 and b"You have no workspace in team-a." in gone.content


def test_a_cluster_that_cannot_be_asked_is_a_503_not_a_500(api, client, member, sessions,
                                                         monkeypatch):  # fmt: skip
    def down(*args):
        raise ConnectionError("the API server does not answer")

    monkeypatch.setattr(sessions, "workspace_projects", down)
    answer = api(member).get("/api/v1/me/workspaces/")
    assert answer.status_code == 503 and "does not answer" in answer.json()["detail"]
    assert api(member).delete("/api/v1/workspaces/team-a/bob/").status_code == 503
    client.force_login(member)
    page = client.get("/me/workspaces/")
    assert page.status_code == 503 and b"cannot be reached now" in page.content
