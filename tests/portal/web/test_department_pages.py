"""Departments on the pages (issue 26): a cluster admin creates and edits one with its CPU and
memory limits as Kubernetes quantities, read back as typed; each error the API's, under its
field, with a 400; projects join it on their form and show its limits; only cluster admins
reach these pages."""

import pytest
from django.test import Client

from portal.tenancy.models import Department, Project

pytestmark = pytest.mark.django_db
FORM = {"name": "dept-d", "quota": "8", "limit": "", "over_quota_weight": "",
        "cpu_limit": "64", "memory_limit": "512Gi", "reclaim_min_runtime_s": "",
        "preempt_min_runtime_s": ""}  # fmt: skip


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_cluster_admin_creates_a_department_with_limits_and_edits_them(cluster_admin):
    client = browser(cluster_admin)
    response = client.post("/departments/new/", FORM)
    assert response.status_code == 302, response.content.decode()[:2000]
    dept = Department.objects.get(name="dept-d")
    assert (dept.cpu_limit_millis, dept.memory_limit_bytes, dept.limit) == (
        64000,
        512 * 2**30,
        None,
    )
    listing = client.get("/departments/").content.decode()
    assert "64 cores" in listing and "512 GiB" in listing
    edit = client.get("/departments/dept-d/").content.decode()
    assert 'value="64"' in edit and 'value="512Gi"' in edit and 'value="8"' in edit
    changed = {k: v for k, v in FORM.items() if k != "name"} | {"cpu_limit": "500m",
                                                                  "memory_limit": ""}  # fmt: skip
    assert client.post("/departments/dept-d/", changed).status_code == 302
    dept.refresh_from_db()
    assert (dept.cpu_limit_millis, dept.memory_limit_bytes) == (500, None)


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("cpu_limit", "two", "&#x27;two&#x27; is not a CPU quantity (cores, e.g. 2 or 500m)"),
        ("memory_limit", "64 GB", "is not a memory quantity (bytes or a number with a unit"),
        ("limit", "2", "must be at least the quota (8.00)"),
        ("quota", "many", "must be a number written with the digits 0-9"),
        ("reclaim_min_runtime_s", "soon", "must be a duration such as 90m"),
    ],
)
def test_a_bad_value_is_said_under_its_field_and_nothing_is_saved(cluster_admin, field, value,
                                                                   said):  # fmt: skip
    response = browser(cluster_admin).post("/departments/new/", FORM | {field: value})
    assert response.status_code == 400
    page = response.content.decode()
    assert f'id="err_{field}"' in page and said in page, page[:3000]
    assert not Department.objects.exists()


def test_a_project_joins_a_department_on_its_form_and_shows_its_limits(cluster_admin, team_a):
    Department.objects.create(name="dept-d", quota=8, cpu_limit_millis=8000)
    client = browser(cluster_admin)
    form = client.get("/projects/team-a/edit/").content.decode()
    assert '<option value="dept-d"' in form
    response = client.post("/projects/team-a/edit/", {"quota": "4", "department": "dept-d"})
    assert response.status_code == 302
    assert Project.objects.get(name="team-a").department.name == "dept-d"
    page = client.get("/projects/team-a/").content.decode()
    assert "dept-d, whose limits cap all its projects together: 8 cores, no memory limit" in page
    assert 'value="dept-d" selected' in client.get("/projects/team-a/edit/").content.decode()
    response = client.post("/departments/dept-d/delete/", follow=True)
    assert "still has 1 project" in response.content.decode()
    assert Department.objects.filter(name="dept-d").exists()
    client.post("/projects/team-a/edit/", {"quota": "4", "department": ""})
    assert Project.objects.get(name="team-a").department is None
    assert client.post("/departments/dept-d/delete/").status_code == 302
    assert not Department.objects.exists()


def test_an_unknown_department_name_is_refused_under_the_field(cluster_admin, team_a):
    response = browser(cluster_admin).post("/projects/team-a/edit/",
                                           {"quota": "4", "department": "nope"})  # fmt: skip
    assert "No department named &#x27;nope&#x27;." in response.content.decode()
    assert Project.objects.get(name="team-a").department is None


@pytest.mark.parametrize("persona", ["owner", "member", "viewer", "outsider"])
def test_only_cluster_admins_reach_the_department_pages(request, persona):
    Department.objects.create(name="dept-d", quota=4)
    client = browser(request.getfixturevalue(persona))
    for path in ("/departments/", "/departments/new/", "/departments/dept-d/"):
        assert client.get(path).status_code == 403
    assert client.post("/departments/dept-d/", FORM | {"cpu_limit": "1"}).status_code == 403
    assert client.post("/departments/dept-d/delete/").status_code == 403
    assert Department.objects.get(name="dept-d").cpu_limit_millis is None


def test_a_project_admin_does_not_get_the_department_field(owner, team_a):
    Department.objects.create(name="dept-d", quota=4)
    client = browser(owner)
    assert 'name="department"' not in client.get("/projects/team-a/edit/").content.decode()
    response = client.post("/projects/team-a/edit/", {"department": "dept-d"})
    assert response.status_code == 403
    assert Project.objects.get(name="team-a").department is None


def test_the_departments_page_shows_gpus_held_and_fair_share_and_weights_as_quota(
    cluster_admin, team_a
):
    """Issue 34 item 9: the page showed CPU and memory but not GPUs or fair share, and an unset
    over-quota weight was blank in lists ("= quota" went through floatformat) but "= quota" on
    the project page."""
    from portal.jobs.models import Job, Status

    dept = Department.objects.create(name="dept-d", quota=8)
    Project.objects.filter(pk=team_a.pk).update(department=dept, fair_share=5.5)
    Job.objects.create(project=team_a, name="held", gpus=2, pods=2, status=Status.RUNNING,
                       placement=[{"node": "n1", "devices": [0, 1]},
                                  {"node": "n2", "devices": [0, 1]}])  # fmt: skip
    listing = browser(cluster_admin).get("/departments/").content.decode()
    row = listing.split('data-department="dept-d"')[1].split("</tr>")[0]
    assert '<td class="num gpus-held">4</td>' in row
    assert '<td class="num fair-share">5.5</td>' in row
    assert "= quota" in row
    projects = browser(cluster_admin).get("/projects/").content.decode()
    assert "= quota" in projects.split('data-project="team-a"')[1].split("</tr>")[0]
