"""Users over REST (cluster admins only) and the management commands `make run` relies on."""

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_a_cluster_admin_creates_a_user_with_a_valid_password(api, cluster_admin):
    client = api(cluster_admin)
    response = client.post(
        "/api/v1/users/", {"username": "carol", "password": "a-long-pass-4858"}, format="json"
    )
    assert response.status_code == 201, response.content
    assert "password" not in response.json()
    assert get_user_model().objects.get(username="carol").check_password("a-long-pass-4858")
    weak = client.post("/api/v1/users/", {"username": "dan", "password": "123"}, format="json")
    assert weak.status_code == 400 and "password" in weak.json()
    again = client.post(
        "/api/v1/users/", {"username": "carol", "password": "another-pass-4858"}, format="json"
    )
    assert again.status_code in (400, 409) and "username" in again.json()


def test_only_cluster_admins_list_or_create_users(api, member):
    assert api(member).get("/api/v1/users/").status_code == 403
    refused = api(member).post("/api/v1/users/", {"username": "x", "password": "y" * 12})
    assert refused.status_code == 403


def test_issue_token_creates_then_returns_the_same_token_on_the_last_line(capsys, cluster_admin):
    call_command("issue_token", cluster_admin.username)
    first = capsys.readouterr().out.strip().splitlines()[-1]
    call_command("issue_token", cluster_admin.username)
    assert capsys.readouterr().out.strip().splitlines()[-1] == first


def test_bootstrap_creates_the_tr4858_cluster_once_and_migrations_create_none(capsys):
    from portal.cluster.models import Node
    from portal.tenancy.models import Project

    assert not Node.objects.exists() and not Project.objects.exists()
    call_command("bootstrap")
    out = capsys.readouterr().out
    assert "password" in out
    assert sorted(Node.objects.values_list("name", "gpus")) == [("dgx1-1", 8), ("dgx1-2", 8)]
    quotas = dict(Project.objects.values_list("name", "quota"))
    assert {k: float(v) for k, v in quotas.items()} == {
        "team-a": 4, "team-b": 2, "team-c": 2, "team-d": 8,
    }  # fmt: skip
    call_command("bootstrap")
    assert Node.objects.count() == 2 and get_user_model().objects.count() == 1
