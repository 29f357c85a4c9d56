"""Departments over REST (issue 26): cluster admins create, read, change and delete them with
the projects' quota, weight and limit rules and the same Kubernetes quantities for their CPU and
memory limits; a bad value is a 400 naming the field; projects join one by `department`; no one
else may read or change them."""

import pytest

from portal.audit.models import AuditEntry
from portal.tenancy.models import Department, Project
from scheduler.quantity import GIB

pytestmark = pytest.mark.django_db
URL = "/api/v1/departments/"


@pytest.fixture
def admin_api(api, cluster_admin):
    return api(cluster_admin)


def test_an_admin_creates_a_department_with_cpu_and_memory_limits(admin_api):
    body = {"name": "dept-d", "quota": 8, "limit": 12, "cpu_limit": "500m",
            "memory_limit": "64Gi"}  # fmt: skip
    response = admin_api.post(URL, body, format="json")
    assert response.status_code == 201, response.content
    dept = Department.objects.get(name="dept-d")
    assert (dept.cpu_limit_millis, dept.memory_limit_bytes) == (500, 64 * GIB)
    got = admin_api.get(f"{URL}dept-d/").json()
    assert (got["cpu_limit"], got["memory_limit"]) == ("500m", "64Gi")
    assert (got["cpu_limit_millis"], got["memory_limit_mib"]) == (500, 65536)
    assert (got["quota"], got["limit"], got["projects"]) == (8.0, 12.0, [])
    assert AuditEntry.objects.filter(action="department.created", target_label="dept-d").exists()


def test_cpu_as_a_json_number_is_cores_and_null_lifts_a_limit(admin_api):
    Department.objects.create(name="dept-d", quota=4, memory_limit_bytes=1 * GIB)
    response = admin_api.patch(f"{URL}dept-d/", {"cpu_limit": 16, "memory_limit": None},
                               format="json")  # fmt: skip
    assert response.status_code == 200, response.content
    assert (response.json()["cpu_limit"], response.json()["memory_limit"]) == ("16", None)
    dept = Department.objects.get(name="dept-d")
    assert (dept.cpu_limit_millis, dept.memory_limit_bytes) == (16000, None)
    entry = AuditEntry.objects.get(action="department.limits_changed")
    assert entry.changes["cpu_limit_millis"] == [None, 16000]


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"cpu_limit": "lots"}, "cpu_limit", "is not a CPU quantity"),
        ({"cpu_limit": "-1"}, "cpu_limit", "is not a CPU quantity"),
        ({"cpu_limit": True}, "cpu_limit", "is not a CPU quantity"),
        ({"memory_limit": "16 Gi"}, "memory_limit", "is not a memory quantity"),
        ({"memory_limit": "1Gb"}, "memory_limit", "is not a memory quantity"),
        ({"memory_limit": -16}, "memory_limit", "is not a memory quantity"),
        ({"quota": 4, "limit": 2}, "limit", "must be at least the quota"),
        ({"quota": -1}, "quota", "greater than or equal to 0"),
        ({"name": "Not A Label"}, "name", ""),
        ({"reclaim_min_runtime_s": -2}, "reclaim_min_runtime_s", "-1 (never)"),
    ],
)
def test_a_bad_value_is_a_400_naming_the_field(admin_api, body, field, words):
    response = admin_api.post(URL, {"name": "dept-d", "quota": 1, **body}, format="json")
    assert response.status_code == 400, response.content
    assert list(response.json()) == [field]
    assert words in " ".join(response.json()[field])
    assert not Department.objects.exists()


def test_a_bad_patch_changes_nothing(admin_api):
    Department.objects.create(name="dept-d", quota=4, cpu_limit_millis=8000)
    response = admin_api.patch(f"{URL}dept-d/", {"cpu_limit": "8 cores", "memory_limit": "1Gi"},
                               format="json")  # fmt: skip
    assert response.status_code == 400 and "cpu_limit" in response.json()
    dept = Department.objects.get(name="dept-d")
    assert (dept.cpu_limit_millis, dept.memory_limit_bytes) == (8000, None)


def test_a_name_is_fixed_and_taken_once(admin_api):
    Department.objects.create(name="dept-d", quota=4)
    again = admin_api.post(URL, {"name": "dept-d", "quota": 1}, format="json")
    assert again.status_code == 409 and "already exists" in str(again.json()["name"])
    renamed = admin_api.patch(f"{URL}dept-d/", {"name": "dept-e"}, format="json")
    assert renamed.status_code == 400
    assert renamed.json()["name"] == ["a department's name cannot be changed"]


def test_a_project_joins_a_department_and_a_department_with_projects_stays(admin_api, team_a):
    Department.objects.create(name="dept-d", quota=4, cpu_limit_millis=2000)
    response = admin_api.patch("/api/v1/projects/team-a/", {"department": "dept-d"}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["department"] == "dept-d"
    assert admin_api.get(f"{URL}dept-d/").json()["projects"] == ["team-a"]
    busy = admin_api.delete(f"{URL}dept-d/")
    assert busy.status_code == 409 and "still has 1 project" in str(busy.json()["name"])
    admin_api.patch("/api/v1/projects/team-a/", {"department": None}, format="json")
    assert admin_api.delete(f"{URL}dept-d/").status_code == 204
    assert not Department.objects.exists()


def test_an_unknown_department_is_a_404_naming_the_field(admin_api, team_a):
    response = admin_api.patch("/api/v1/projects/team-a/", {"department": "nope"}, format="json")
    assert response.status_code == 404
    assert response.json() == {"department": ["No department named 'nope'."]}
    assert Project.objects.get(name="team-a").department is None


def test_a_projects_limit_above_its_departments_is_allowed(admin_api):
    """As in KAI and Run:AI, where every queue on a job's path is checked: the department's
    limit caps its projects together, a project's own may be higher (or absent)."""
    admin_api.post(URL, {"name": "dept-d", "quota": 4, "cpu_limit": "8"}, format="json")
    body = {"name": "team-x", "quota": 2, "department": "dept-d", "cpu_limit": "64",
            "memory_limit": "1Ti"}  # fmt: skip
    response = admin_api.post("/api/v1/projects/", body, format="json")
    assert response.status_code == 201, response.content
    assert Project.objects.get(name="team-x").cpu_limit_millis == 64000


@pytest.mark.parametrize("persona", ["owner", "member", "viewer", "outsider"])
def test_only_cluster_admins_see_or_change_departments(api, request, persona):
    Department.objects.create(name="dept-d", quota=4)
    client = api(request.getfixturevalue(persona))
    assert client.get(URL).status_code == 403
    assert client.get(f"{URL}dept-d/").status_code == 403
    assert client.post(URL, {"name": "x", "quota": 1}, format="json").status_code == 403
    patch = client.patch(f"{URL}dept-d/", {"cpu_limit": "64"}, format="json")
    assert patch.status_code == 403
    assert client.delete(f"{URL}dept-d/").status_code == 403
    assert Department.objects.get(name="dept-d").cpu_limit_millis is None
    assert api().get(URL).status_code == 401


def test_a_project_admin_cannot_move_the_project_to_a_department(api, owner, team_a):
    Department.objects.create(name="dept-d", quota=4)
    response = api(owner).patch("/api/v1/projects/team-a/", {"department": "dept-d"},
                                format="json")  # fmt: skip
    assert response.status_code == 403
    assert Project.objects.get(name="team-a").department is None


def test_listing_projects_reads_their_departments_in_the_same_query(
    admin_api, django_assert_num_queries
):
    dept = Department.objects.create(name="dept-d", quota=8)
    for name in ("p1", "p2", "p3"):
        Project.objects.create(name=name, quota=1, department=dept)
    admin_api.get("/api/v1/projects/")  # the token's first use writes its last-used time
    with django_assert_num_queries(3) as queries:  # token, count, page
        body = admin_api.get("/api/v1/projects/").json()
    assert [row["department"] for row in body["results"]] == ["dept-d"] * 3
    assert not any('FROM "tenancy_department"' in q["sql"] for q in queries.captured_queries)
