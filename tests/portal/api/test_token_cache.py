"""A web process keeps the API tokens it has read (issue 39): a client's next request reads no
token row, and whatever refuses a token or changes its user is obeyed from the very next
request: a revocation (by the API, by a password change), a deactivation, a deletion, an
expiry, a cluster admin's role taken away."""

from __future__ import annotations

from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.tenancy import services, token_cache
from portal.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db

JOBS = "/api/v1/jobs/?project=team-a"


@pytest.fixture(autouse=True)
def _shared_cache(monkeypatch):
    """The tests' cache is process memory (no REDIS_URL): keep tokens as a Redis-backed portal
    does; the test of the embedded default turns it off again."""
    monkeypatch.setattr(token_cache, "SHARED", True)


def token_reads(client) -> int:
    """How many token rows one request reads (its answer must be a 200)."""
    with CaptureQueriesContext(connection) as queries:
        answer = client.get(JOBS)
    assert answer.status_code == 200, answer.content
    return sum('FROM "tenancy_apitoken"' in query["sql"] for query in queries.captured_queries)


def test_a_clients_next_request_reads_no_token_row(api, member):
    client = api(member)
    token_reads(client)
    assert token_reads(client) == 0
    assert token_reads(client) == 0


def test_a_token_revoked_through_the_api_is_refused_on_the_next_request(api, member):
    client = api(member)
    token_reads(client)
    token = ApiToken.objects.get(user=member)
    assert client.delete(f"/api/v1/auth/tokens/{token.pk}/").status_code == 204
    answer = client.get(JOBS)
    assert answer.status_code == 401
    assert "revoked" in answer.json()["detail"]


def test_a_password_change_refuses_every_kept_token_of_the_user(api, member):
    first, second = api(member), api(member)
    token_reads(first), token_reads(second)
    services.set_password(member, "another-password-39")
    assert first.get(JOBS).status_code == 401
    assert second.get(JOBS).status_code == 401


def test_a_deactivated_or_deleted_user_is_refused_on_the_next_request(
    api, member, viewer, cluster_admin
):
    client, other = api(member), api(viewer)
    token_reads(client), token_reads(other)
    services.update_user(member, by=cluster_admin, is_active=False)
    assert client.get(JOBS).status_code == 401
    viewer.delete()
    assert other.get(JOBS).status_code == 401


def test_an_expiry_is_checked_at_each_request(api, member):
    client = api(member)
    token_reads(client)
    token = ApiToken.objects.get(user=member)
    token.expires_at = timezone.now() - timedelta(seconds=1)
    token.save(update_fields=["expires_at"])
    assert client.get(JOBS).status_code == 401


def test_a_cluster_admin_whose_role_is_taken_away_is_no_admin_on_the_next_request(
    api, cluster_admin, owner
):
    admin = services.create_user("second-root", "x-test-password-2", is_staff=True)
    client = api(admin)
    assert client.get("/api/v1/users/").status_code == 200
    services.update_user(admin, by=cluster_admin, is_staff=False)
    assert client.get("/api/v1/users/").status_code == 403


def test_what_a_request_changes_on_its_user_is_not_kept(api, member):
    client = api(member)
    token_reads(client)
    key = client._credentials["HTTP_AUTHORIZATION"].removeprefix("Token ")
    services.use_token(key).user.is_staff = True  # in memory only, as a view might
    assert services.use_token(key).user.is_staff is False


def test_a_flushed_cache_reads_the_row_again(api, member):
    from django.core.cache import cache

    client = api(member)
    token_reads(client)
    cache.delete(token_cache.GENERATION)
    assert token_reads(client) == 1
    assert token_reads(client) == 0


class _Away:
    """A cache whose server does not answer, as Django's RedisCache raises then."""

    def get(self, *args, **kwargs):
        raise redis.exceptions.ConnectionError("Error 111 connecting to 127.0.0.1:6379.")

    add = set = get


def test_while_the_cache_is_away_tokens_are_read_and_a_revocation_is_a_503(
    api, member, monkeypatch
):
    client = api(member)
    token_reads(client)
    monkeypatch.setattr(token_cache, "cache", _Away())
    assert token_reads(client) == 1  # nothing kept is used while its generation is unknown
    token = ApiToken.objects.get(user=member)
    answer = client.delete(f"/api/v1/auth/tokens/{token.pk}/")
    assert answer.status_code == 503 and "Redis" in answer.content.decode()
    token.refresh_from_db()
    assert token.revoked_at is None  # refused whole: no process keeps a revoked token unseen


def test_without_a_shared_cache_every_request_reads_its_token(api, member, monkeypatch):
    # The embedded default's cache is process memory: another process (a shell, `manage.py
    # changepassword`) revoking a token could not move this process's generation, so nothing
    # is kept there.
    monkeypatch.setattr(token_cache, "SHARED", False)
    client = api(member)
    token_reads(client)
    assert token_reads(client) == 1
    assert token_reads(client) == 1


def test_a_process_memory_cache_is_not_shared(settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert not token_cache.shared()
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": "redis://127.0.0.1:6379/0"}}  # fmt: skip
    assert token_cache.shared()
