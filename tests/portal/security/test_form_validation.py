"""Issue 22 item 8, the pages: numbers in other scripts' digits (the full-width one, U+FF11, was
read as 1) and a project admin's quota edit (dropped with a "saved") are refused out loud; a bad
mount path is said next to its field. Nothing is written."""

import pytest
from django.test import Client

from portal.jobs.models import Job
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_submit_form_says_what_is_wrong_with_a_mount_path(member, nodes):
    form = {"project": "team-a", "name": "j", "gpus": "1", "pods": "1", "type": "train",
            "volumes": "data:/../../etc"}  # fmt: skip
    page = browser(member).post("/jobs/new/", form).content.decode()
    assert 'id="err_volumes"' in page and "must not contain &#x27;..&#x27;" in page
    assert not Job.objects.exists()


# --- Digits: 0-9 only in the pages' numbers ---------------------------------------------------


@pytest.mark.parametrize("field", ["gpus", "pods", "priority", "estimate_s", "ports"])
@pytest.mark.parametrize("text", ["\uff11", "\u0663", "1_0"], ids=["full-width", "arabic", "_"])
def test_the_submit_form_reads_numbers_in_the_digits_0_to_9_only(member, nodes, field, text):
    form = {"project": "team-a", "name": "j", "gpus": "1", "pods": "1", "type": "train"}
    response = browser(member).post("/jobs/new/", form | {field: text})
    page = response.content.decode()
    assert response.status_code == 200 and f'id="err_{field}"' in page
    assert not Job.objects.exists()


def test_the_submit_form_still_reads_ascii_numbers(member, nodes):
    form = {"project": "team-a", "name": "j", "gpus": "0.5", "pods": "2", "type": "interactive",
            "priority": "-3", "estimate_s": "2h", "ports": "8888, 6006"}  # fmt: skip
    assert browser(member).post("/jobs/new/", form).status_code == 302
    saved = Job.objects.get(name="j")
    assert (float(saved.gpus), saved.pods, saved.priority) == (0.5, 2, -3)
    assert (saved.estimate_s, saved.ports) == (7200, [8888, 6006])


def test_the_project_and_node_forms_read_the_digits_0_to_9_only(cluster_admin, nodes):
    client = browser(cluster_admin)
    page = client.post("/projects/new/", {"name": "team-z", "quota": "\uff11"}).content.decode()
    assert 'id="err_quota"' in page and "digits 0-9" in page
    assert not Project.objects.filter(name="team-z").exists()
    node = {"name": "n3", "gpus": "\uff18", "pool": "default"}
    page = client.post("/nodes/", node).content.decode()
    assert 'id="err_gpus"' in page and "digits 0-9" in page
    assert client.post("/projects/new/", {"name": "team-z", "quota": "1.5"}).status_code == 302
    assert float(Project.objects.get(name="team-z").quota) == 1.5


# --- A project admin's quota ------------------------------------------------------------------


def test_a_project_admins_quota_edit_is_refused_out_loud_and_nothing_saved(owner):
    client = browser(owner)
    response = client.post("/projects/team-a/edit/", {"interactive_time_limit_s": "3600",
                                                        "quota": "99"})  # fmt: skip
    page = response.content.decode()
    assert response.status_code == 403
    assert "Only cluster admins change quota" in page and "saved." not in page.replace(
        "nothing was saved.", "")  # fmt: skip
    project = Project.objects.get(name="team-a")
    assert (project.interactive_time_limit_s, float(project.quota)) == (None, 4.0)


def test_a_project_admin_sees_the_quota_read_only(owner):
    page = browser(owner).get("/projects/team-a/edit/").content.decode()
    assert 'name="quota"' not in page
    assert "GPU quota 4" in page and "only cluster admins change these" in page
