"""Fair share between the users of a project in the portal (issue 36, R21.4-R21.8): the
project's switch and weights through the API (bad input a 400 naming the field) and the project
form, what reaches the core, and real cycles on PostgreSQL in which two teammates end with 4 and
4 of the project's 8 GPUs and the one over share waits with a reason naming their user share.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from portal.jobs.models import HOLDING, Job, Status
from portal.jobs.services import submit_job
from portal.scheduling import snapshot
from portal.tenancy.models import Membership, Project

pytestmark = pytest.mark.django_db


def researcher(name: str, project: Project):
    user = get_user_model().objects.create_user(username=name, password="x-test-password-1")
    Membership.objects.create(user=user, project=project, role="researcher")
    return user


def test_r21_4_the_switch_and_weights_reach_the_core(cluster):
    team = cluster.project("team-a", 8, user_fair_share=True, user_weights={"ann": 3})
    cluster.project("team-b", 2)
    projects, _ = snapshot.load_projects(set())
    by_name = {p.name: p for p in projects}
    assert by_name["team-a"].user_fair_share is True
    assert by_name["team-a"].user_weights == (("ann", 3.0),)
    assert (by_name["team-b"].user_fair_share, by_name["team-b"].user_weights) == (False, ())
    assert team.user_fair_shares == {}


def test_r21_5_two_teammates_end_with_four_and_four_and_the_reason_names_the_user_share(
    cluster,
):
    cluster.node("n1", 8)
    team = cluster.project("team-a", 8, user_fair_share=True)
    ann, bob = researcher("ann", team), researcher("bob", team)
    for i in range(6):
        submit_job(ann, team, name=f"ann-{i}", gpus=1)
    cluster.settle()
    assert Project.objects.get(name="team-a").user_fair_shares == {"ann": 6.0}
    for i in range(6):
        submit_job(bob, team, name=f"bob-{i}", gpus=1)
    cluster.settle()

    running = {
        name: Job.objects.filter(user__username=name, status__in=HOLDING).count()
        for name in ("ann", "bob")
    }
    assert running == {"ann": 4, "bob": 4}
    assert Project.objects.get(name="team-a").user_fair_shares == {"ann": 4.0, "bob": 4.0}
    waiting = cluster.job("team-a", "ann-5")
    assert waiting.status == Status.PENDING
    assert "ann's user share of 4 GPUs in team-a" in waiting.pending_reason
    assert "R21.6" in waiting.pending_reason


def test_r21_4_the_api_shows_and_changes_the_switch_and_weights(api, cluster_admin, team_a):
    researcher("ann", team_a)
    client = api(cluster_admin)
    answer = client.get("/api/v1/projects/team-a/").json()
    assert (answer["user_fair_share"], answer["user_weights"]) == (False, {})
    assert answer["user_fair_shares"] == {}
    changed = client.patch(
        "/api/v1/projects/team-a/",
        {"user_fair_share": True, "user_weights": {"ann": 2}},
        format="json",
    )
    assert changed.status_code == 200, changed.content
    team_a.refresh_from_db()
    assert (team_a.user_fair_share, team_a.user_weights) == (True, {"ann": 2.0})


@pytest.mark.parametrize(
    ("body", "field", "text"),
    [
        ({"user_fair_share": "yes"}, "user_fair_share", "must be true or false"),
        ({"user_weights": [["ann", 2]]}, "user_weights", "must be an object"),
        ({"user_weights": {"ann": "2"}}, "user_weights", "'ann': must be a number"),
        ({"user_weights": {"ann": 0}}, "user_weights", "a weight must be above 0"),
        ({"user_weights": {"ann": 5000}}, "user_weights", "at most 1000"),
        ({"user_fair_shares": {"ann": 8}}, None, None),  # read only: ignored, not stored
    ],
)
def test_r21_4_bad_switch_or_weights_are_a_400_naming_the_field_and_nothing_is_saved(
    api, cluster_admin, team_a, body, field, text
):
    researcher("ann", team_a)
    answer = api(cluster_admin).patch("/api/v1/projects/team-a/", body, format="json")
    team_a.refresh_from_db()
    assert (team_a.user_fair_share, team_a.user_weights, team_a.user_fair_shares) == (
        False,
        {},
        {},
    )
    if field is None:
        assert answer.status_code == 200
        return
    assert answer.status_code == 400, answer.content
    assert text in " ".join(answer.json()[field]), answer.json()


def test_r21_4_a_weight_for_an_unknown_user_is_refused_naming_them(api, cluster_admin, team_a):
    answer = api(cluster_admin).patch(
        "/api/v1/projects/team-a/", {"user_weights": {"nobody": 2}}, format="json"
    )
    assert answer.status_code in (400, 404)
    assert "no user named 'nobody'" in " ".join(answer.json()["user_weights"])
    team_a.refresh_from_db()
    assert team_a.user_weights == {}


def test_r21_4_a_project_member_may_not_switch_it(api, member, team_a):
    answer = api(member).patch("/api/v1/projects/team-a/", {"user_fair_share": True}, format="json")
    assert answer.status_code == 403
    team_a.refresh_from_db()
    assert team_a.user_fair_share is False


def test_r21_4_the_project_form_shows_saves_and_clears_the_switch_and_weights(
    cluster_admin, team_a
):
    researcher("ann", team_a)
    page = Client()
    page.force_login(cluster_admin)
    form = page.get("/projects/team-a/edit/")
    assert 'name="user_fair_share"' in form.content.decode()
    base = {"quota": "4"}
    saved = page.post(
        "/projects/team-a/edit/", {**base, "user_fair_share": "on", "user_weights": "ann=2.5"}
    )
    assert saved.status_code == 302, saved.content.decode()[:2000]
    team_a.refresh_from_db()
    assert (team_a.user_fair_share, team_a.user_weights) == (True, {"ann": 2.5})
    detail = page.get("/projects/team-a/").content.decode()
    assert "fair share divided among active users" in detail and "ann 2.5" in detail

    bad = page.post("/projects/team-a/edit/", {**base, "user_weights": "ann=two"})
    assert bad.status_code == 400
    assert "must be a number" in bad.content.decode()
    team_a.refresh_from_db()
    assert (team_a.user_fair_share, team_a.user_weights) == (True, {"ann": 2.5})

    cleared = page.post("/projects/team-a/edit/", {**base, "user_weights": ""})
    assert cleared.status_code == 302
    team_a.refresh_from_db()
    assert (team_a.user_fair_share, team_a.user_weights) == (False, {})
