"""Projects and nodes over REST: validation names the field and the reason; admins write."""

import pytest

pytestmark = pytest.mark.django_db


def errors_of(response, field):
    body = response.json()
    return " ".join(str(m) for m in body.get(field, []))


@pytest.fixture
def admin_api(api, cluster_admin, nodes):
    return api(cluster_admin)


def test_it_creates_a_project_with_quota_weight_limit_and_pools(admin_api):
    response = admin_api.post(
        "/api/v1/projects/",
        {"name": "team-x", "quota": 2.5, "over_quota_weight": 1, "limit": 6,
         "node_pools": ["default"]},
        format="json",
    )  # fmt: skip
    assert response.status_code == 201, response.content
    body = admin_api.get("/api/v1/projects/team-x/").json()
    assert (body["quota"], body["limit"], body["node_pools"]) == (2.5, 6.0, ["default"])
    for field in ("allocated_gpus", "fair_share", "running_jobs", "pending_jobs"):
        assert field in body


def test_a_pool_no_node_is_in_is_a_404_naming_it(admin_api):
    body = {"name": "p", "quota": 1, "node_pools": ["a100"]}
    response = admin_api.post("/api/v1/projects/", body, format="json")
    assert response.status_code == 404, response.content
    assert "a100" in errors_of(response, "node_pools")


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ({"name": "p", "quota": -1}, "quota", ""),
        ({"name": "p", "quota": 4, "limit": 2}, "limit", "at least the quota"),
        ({"name": "Not A Label", "quota": 1}, "name", ""),
        ({"name": "<b>x</b>", "quota": 1}, "name", ""),
        ({"name": "", "quota": 1}, "name", ""),
        ({"name": "p", "quota": "many"}, "quota", ""),
    ],
)
def test_it_rejects_a_bad_project_naming_the_field(admin_api, body, field, words):
    response = admin_api.post("/api/v1/projects/", body, format="json")
    assert response.status_code == 400, response.content
    assert field in response.json()
    assert words in errors_of(response, field)


def test_a_duplicate_project_name_is_a_conflict(admin_api):
    assert (
        admin_api.post("/api/v1/projects/", {"name": "p", "quota": 1}, format="json").status_code
        == 201
    )
    response = admin_api.post("/api/v1/projects/", {"name": "p", "quota": 1}, format="json")
    assert response.status_code in (400, 409)
    assert "name" in response.json()


def test_only_cluster_admins_write_projects_and_nodes(api, member):
    client = api(member)
    assert (
        client.post("/api/v1/projects/", {"name": "p", "quota": 1}, format="json").status_code
        == 403
    )
    assert (
        client.post("/api/v1/nodes/", {"name": "n9", "gpus": 8}, format="json").status_code == 403
    )


def test_a_cpu_only_node_has_zero_gpus(admin_api):
    response = admin_api.post("/api/v1/nodes/", {"name": "cpu-1", "gpus": 0}, format="json")
    assert response.status_code == 201, response.content


def test_it_creates_patches_and_deletes_a_node(admin_api):
    response = admin_api.post(
        "/api/v1/nodes/",
        {"name": "a100-1", "gpus": 4, "gpu_memory_mib": 81920, "pool": "a100"},
        format="json",
    )
    assert response.status_code == 201, response.content
    response = admin_api.patch("/api/v1/nodes/a100-1/", {"ready": False}, format="json")
    assert response.status_code == 200 and response.json()["ready"] is False
    assert admin_api.delete("/api/v1/nodes/a100-1/").status_code == 204
    assert admin_api.get("/api/v1/nodes/a100-1/").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "n", "gpus": -8}, "gpus"),
        ({"name": "n", "gpus": "eight"}, "gpus"),
        ({"name": "N_1", "gpus": 8}, "name"),
        ({"name": "dgx1-1", "gpus": 8}, "name"),
    ],
)
def test_it_rejects_a_bad_node_naming_the_field(admin_api, body, field):
    response = admin_api.post("/api/v1/nodes/", body, format="json")
    assert response.status_code in (400, 409), response.content
    assert field in response.json()


def test_lists_are_paginated_with_page_size_up_to_1000(admin_api):
    for i in range(3):
        admin_api.post("/api/v1/projects/", {"name": f"p{i}", "quota": 1}, format="json")
    body = admin_api.get("/api/v1/projects/?page_size=2").json()
    assert set(body) == {"count", "next", "previous", "results"}
    assert body["count"] == 3 and len(body["results"]) == 2 and body["next"]
    assert len(admin_api.get("/api/v1/projects/?page_size=1000").json()["results"]) == 3
    refused = admin_api.get("/api/v1/projects/?page_size=5000")  # not quietly cut to 1000
    assert refused.status_code == 400 and list(refused.json()) == ["page_size"]
