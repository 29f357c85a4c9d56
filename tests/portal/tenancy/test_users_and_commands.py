"""Users over REST (cluster admins only), on the users page and the user's own page, and the
management commands `make run` relies on: every door creates users and sets passwords through
the same services."""

from html import escape
from unittest import mock

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.http import HttpRequest
from django.test import Client

from portal.tenancy import services
from portal.tenancy.models import ApiToken, token_digest

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


def test_issue_token_prints_a_new_named_token_on_the_last_line_each_time(capsys, cluster_admin):
    call_command("issue_token", cluster_admin.username)
    first = capsys.readouterr().out.strip().splitlines()[-1]
    call_command("issue_token", cluster_admin.username, "--name", "ci", "--expires-in", "30d")
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] != first and "'ci'" in printed[0] and "expires" in printed[0]
    names = ApiToken.objects.filter(user=cluster_admin).values_list("name", flat=True)
    assert sorted(names) == ["ci", "issued by manage.py issue_token"]
    assert not ApiToken.objects.filter(digest__in=[first, printed[-1]]).exists()  # hashed


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--expires-in", "soon"], "--expires-in: must be a duration"),
        (["--expires-in", "0d"], "--expires-in: must be in the future"),
        (["--name", " "], "--name: 1 to 100 characters"),
    ],
)
def test_issue_token_refuses_a_bad_expiry_or_name(cluster_admin, args, reason):
    with pytest.raises(CommandError, match=reason):
        call_command("issue_token", cluster_admin.username, *args)
    assert not ApiToken.objects.exists()


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


# --- One service per write: create_user and set_password, whichever door is used -----------


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_duplicate_username_over_the_api_is_a_409_naming_the_field_and_writes_nothing(
    api, cluster_admin, member
):
    body = {"username": "bob", "password": "a-long-pass-4858", "email": "new@example.org"}
    response = api(cluster_admin).post("/api/v1/users/", body, format="json")
    assert response.status_code == 409
    assert response.json() == {"username": ["a user named 'bob' already exists"]}
    member.refresh_from_db()
    assert member.email == "" and member.check_password("x-test-password-1")


def test_a_duplicate_username_on_the_users_page_is_named_next_to_the_field_and_creates_nothing(
    cluster_admin, member
):
    users = get_user_model().objects.count()
    form = {"username": "bob", "password": "a-long-pass-4858", "is_staff": "on"}
    response = browser(cluster_admin).post("/users/", form)
    page = response.content.decode()
    assert response.status_code == 200 and 'id="err_username"' in page
    assert escape("a user named 'bob' already exists") in page
    assert get_user_model().objects.count() == users
    member.refresh_from_db()
    assert not member.is_staff and member.check_password("x-test-password-1")


def test_the_api_and_the_users_page_create_users_through_create_user(api, cluster_admin):
    with mock.patch.object(services, "create_user", wraps=services.create_user) as create_user:
        body = {"username": "carol", "password": "a-long-pass-4858", "is_staff": True}
        assert api(cluster_admin).post("/api/v1/users/", body, format="json").status_code == 201
        form = {"username": "dan", "password": "a-long-pass-4858", "email": "dan@example.org"}
        assert browser(cluster_admin).post("/users/", form).status_code == 302
    assert [call.kwargs["username"] for call in create_user.call_args_list] == ["carol", "dan"]
    carol, dan = (get_user_model().objects.get(username=name) for name in ("carol", "dan"))
    assert (carol.is_staff, dan.is_staff, dan.email) == (True, False, "dan@example.org")


def test_the_users_page_and_my_page_set_passwords_through_set_password(cluster_admin, member):
    with mock.patch.object(services, "set_password", wraps=services.set_password) as set_password:
        browser(cluster_admin).post("/users/bob/password/", {"password": "another-long-pass-7"})
        member.refresh_from_db()
        mine = browser(member)
        new = "a-third-long-pass-8"
        form = {"action": "password", "old_password": "another-long-pass-7",
                "new_password1": new, "new_password2": new}  # fmt: skip
        assert mine.post("/me/", form)["Location"] == "/me/"
    assert [call.args[0] for call in set_password.call_args_list] == [member, member]
    assert mine.get("/me/").status_code == 200  # still signed in after the change
    # the request: every sign-in goes through django-axes, which needs one
    assert Client().login(request=HttpRequest(), username="bob", password="a-third-long-pass-8")


def test_a_weak_password_on_my_page_is_named_and_the_old_one_stays(member):
    form = {"action": "password", "old_password": "x-test-password-1",
            "new_password1": "123", "new_password2": "123"}  # fmt: skip
    response = browser(member).post("/me/", form)
    assert response.status_code == 200 and "too short" in response.content.decode()
    member.refresh_from_db()
    assert member.check_password("x-test-password-1")


def test_bootstrap_creates_its_admin_through_create_user(capsys):
    with mock.patch.object(services, "create_user", wraps=services.create_user) as create_user:
        call_command("bootstrap")
    assert create_user.call_count == 1
    admin = get_user_model().objects.get()
    assert admin.is_staff and admin.is_superuser and admin.is_active


def test_issue_token_issues_through_the_service_the_api_uses(capsys, member):
    with mock.patch.object(services, "issue_token", wraps=services.issue_token) as issue_token:
        call_command("issue_token", "bob")
    assert issue_token.call_count == 1
    key = capsys.readouterr().out.strip().splitlines()[-1]
    assert ApiToken.objects.get(user=member).digest == token_digest(key)
