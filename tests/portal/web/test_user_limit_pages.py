"""The per-user limits' pages (issue 36): the project's admins set the default and members'
overrides through the API's serializer (a bad value is the form again, status 400, the reason
under its field, nothing saved); every member reads the limits in force for them on the project
page; a researcher may not open the form."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.tenancy.models import UserLimit

pytestmark = pytest.mark.django_db
NEW = "/projects/team-a/user-limits/new/"


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_project_admin_sets_the_default_and_an_override_that_members_read(owner, member, viewer):
    admin = signed_in(owner)
    assert admin.get(NEW).status_code == 200
    saved = admin.post(NEW, {"user": "", "max_gpus": "2", "max_pending": "5"})
    assert saved.status_code == 302 and saved["Location"] == "/projects/team-a/"
    form = admin.get(NEW).content.decode()
    assert "Every user (the project default)" not in form  # set already: offered no more
    saved = admin.post(NEW, {"user": "bob", "max_gpus": "3", "max_running": ""})
    assert saved.status_code == 302
    own = UserLimit.objects.get(user=member)
    assert (own.max_gpus, own.max_running, own.max_pending) == (3, None, None)
    page = signed_in(member).get("/projects/team-a/").content.decode()
    assert "Your limits here: 3 GPUs held, 5 pending jobs" in page
    assert 'data-user-limit="bob"' in page and "Set a limit" not in page
    page = signed_in(viewer).get("/projects/team-a/").content.decode()
    assert "Your limits here: 2 GPUs held, 5 pending jobs" in page
    assert 'data-user-limit="bob"' not in page  # a teammate's override is not theirs to read


@pytest.mark.parametrize(
    ("form", "field", "words"),
    [
        ({"max_gpus": "-1"}, "max_gpus", "greater than or equal to 0"),
        ({"max_gpus": "two"}, "max_gpus", "must be a number written with the digits 0-9"),
        ({"max_running": "1.5"}, "max_running", "A valid integer is required"),
        ({"max_pending": "100001"}, "max_pending", "less than or equal to 100000"),
        ({"max_gpus": ""}, "max_gpus", "give at least one of"),
        ({"user": "eve", "max_gpus": "1"}, "user", "eve is not a member of team-a"),
    ],
)
def test_a_bad_value_is_the_form_again_naming_the_field_and_nothing_is_saved(
    owner, outsider, form, field, words
):
    answer = signed_in(owner).post(NEW, {"user": "", **form})
    assert answer.status_code == 400
    page = answer.content.decode()
    assert f'id="err_{field}"' in page and words in page
    assert UserLimit.objects.count() == 0


def test_the_admin_edits_and_removes_a_limit(owner, member):
    limit = UserLimit.objects.create(project=member.memberships.get().project, max_running=2)
    admin = signed_in(owner)
    edit = f"/projects/team-a/user-limits/{limit.id}/"
    assert 'value="2"' in admin.get(edit).content.decode()
    assert admin.post(edit, {"max_running": "", "max_interactive": "1"}).status_code == 302
    limit.refresh_from_db()
    assert (limit.max_running, limit.max_interactive) == (None, 1)
    assert admin.post(edit, {"max_interactive": ""}).status_code == 400  # none left: refused
    assert admin.post(f"{edit}delete/").status_code == 302
    assert not UserLimit.objects.exists()


def test_a_researcher_may_not_open_the_form_nor_post_it(member):
    client = signed_in(member)
    assert client.get(NEW).status_code == 403
    assert client.post(NEW, {"user": "bob", "max_gpus": "99"}).status_code == 403
    assert not UserLimit.objects.exists()


def test_the_job_form_says_why_a_submission_past_the_pending_limit_is_refused(member, nodes):
    UserLimit.objects.create(project=member.memberships.get().project, max_pending=1)
    client = signed_in(member)
    form = {"project": "team-a", "name": "b-1", "gpus": "1", "pods": "1", "type": "train"}
    assert client.post("/jobs/new/", form).status_code == 302
    page = client.post("/jobs/new/", {**form, "name": "b-2"}).content.decode()
    assert 'role="alert"' in page
    assert "at most 1 may wait per user in team-a (its per-user limit max_pending)" in page
