"""Issue 22 item 7: each sign-in is a new named token that may expire; expired, revoked and
unknown tokens are 401s that say which; `last_used` costs at most one write a minute; bad
names and expiries are 400s naming the field."""

from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from portal.tenancy import services, token_cache
from portal.tenancy.models import ApiToken

pytestmark = pytest.mark.django_db
LOGIN = "/api/v1/auth/token/"
TOKENS = "/api/v1/auth/tokens/"
BOB = {"username": "bob", "password": "x-test-password-1"}


@pytest.fixture(autouse=True)
def fresh_throttle():
    """The login throttle counts in the cache, which outlives each test's transaction."""
    cache.clear()
    yield
    cache.clear()


def sign_in(api, **fields):
    return api().post(LOGIN, {**BOB, **fields}, format="json")


def with_token(api, key: str):
    client = api()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_signing_in_twice_gives_two_tokens_and_the_first_still_works(api, member):
    first, second = sign_in(api).json(), sign_in(api).json()
    assert first["token"] != second["token"] and first["id"] != second["id"]
    assert with_token(api, first["token"]).get("/api/v1/projects/").status_code == 200
    assert with_token(api, second["token"]).get("/api/v1/projects/").status_code == 200
    assert ApiToken.objects.filter(user=member, revoked_at__isnull=True).count() == 2


def test_a_new_token_has_its_name_expiry_and_prefix_and_is_listed_without_its_key(api, member):
    answer = sign_in(api, name="nightly CI", expires_in="12h")
    assert answer.status_code == 200, answer.content
    made = answer.json()
    assert made["name"] == "nightly CI" and made["token"].startswith(made["prefix"])
    expires = timezone.datetime.fromisoformat(made["expires_at"])
    assert timedelta(hours=11, minutes=59) < expires - timezone.now() <= timedelta(hours=12)
    listed = with_token(api, made["token"]).get(TOKENS).json()["results"]
    assert [(t["name"], t["current"], t["expired"]) for t in listed] == [
        ("nightly CI", True, False)
    ]
    assert made["token"] not in str(listed) and "digest" not in listed[0]


def test_an_iso_expiry_without_a_zone_is_utc(api, member):
    when = (timezone.now() + timedelta(days=3)).replace(microsecond=0, tzinfo=None)
    made = sign_in(api, expires_in=when.isoformat()).json()
    assert made["expires_at"] == when.isoformat() + "Z"


@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"expires_in": "soon"}, "expires_in", "must be a duration such as 90m, 12h, 30d or 2w"),
        ({"expires_in": 30}, "expires_in", "must be a duration"),
        ({"expires_in": "0d"}, "expires_in", "must be in the future"),
        ({"expires_in": "2020-01-01T00:00:00Z"}, "expires_in", "must be in the future"),
        ({"expires_in": "2030-02-31T00:00:00"}, "expires_in", "must be a duration"),
        ({"expires_in": "9999999w"}, "expires_in", "must be at most 3650 days from now"),
        ({"expires_in": "3651d"}, "expires_in", "must be at most 3650 days from now"),
        ({"name": ""}, "name", "may not be blank"),
        ({"name": "x" * 101}, "name", "no more than 100 characters"),
    ],
)
def test_a_bad_name_or_expiry_is_a_400_naming_the_field_and_makes_no_token(
    api, member, fields, field, reason
):
    answer = sign_in(api, **fields)
    assert answer.status_code == 400 and reason in " ".join(answer.json()[field]), answer.json()
    assert not ApiToken.objects.exists()


def test_an_expired_token_is_a_401_that_says_so(api, member):
    key = sign_in(api, expires_in="1h").json()["token"]
    ApiToken.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    refused = with_token(api, key).get("/api/v1/projects/")
    assert refused.status_code == 401
    assert refused.json() == {"detail": "Token expired: sign in again."}
    assert refused["WWW-Authenticate"] == "Token"


def test_a_revoked_token_is_a_401_that_says_so_and_an_unknown_one_is_invalid(api, member):
    made = sign_in(api).json()
    assert with_token(api, made["token"]).delete(f"{TOKENS}{made['id']}/").status_code == 204
    refused = with_token(api, made["token"]).get("/api/v1/projects/")
    assert refused.status_code == 401
    assert refused.json()["detail"] == "Token revoked (revoked by its owner): sign in again."
    unknown = with_token(api, made["token"] + "x").get("/api/v1/projects/")
    assert unknown.status_code == 401 and unknown.json()["detail"] == "Invalid token."


def test_an_inactive_users_token_is_refused(api, member):
    key = sign_in(api).json()["token"]
    type(member).objects.filter(pk=member.pk).update(is_active=False)
    assert with_token(api, key).get("/api/v1/projects/").json()["detail"] == (
        "User inactive or deleted."
    )


def test_last_used_is_written_at_most_once_a_minute(api, member, monkeypatch):
    monkeypatch.setattr(token_cache, "SHARED", True)  # a Redis-backed portal keeps the token
    token, key = services.issue_token(member, "busy script")
    assert token.last_used is None
    assert services.use_token(key).last_used is not None  # first use: noted
    with CaptureQueriesContext(connection) as queries:
        services.use_token(key)  # seconds later: no write (nor a read: the row is kept)
    assert [q["sql"] for q in queries if not q["sql"].startswith("SELECT")] == []
    later = timezone.now() + timedelta(seconds=61)
    monkeypatch.setattr(services.timezone, "now", lambda: later)
    with CaptureQueriesContext(connection) as queries:
        used = services.use_token(key)
    assert [q["sql"].split()[0] for q in queries if "tenancy_apitoken" in q["sql"]] == ["UPDATE"]
    token.refresh_from_db()
    assert token.last_used == used.last_used == later


def test_revoking_twice_is_a_404_the_second_time(api, member):
    made = sign_in(api).json()
    other = sign_in(api).json()
    client = with_token(api, other["token"])
    assert client.delete(f"{TOKENS}{made['id']}/").status_code == 204
    assert client.delete(f"{TOKENS}{made['id']}/").status_code == 404
    assert [t["id"] for t in client.get(TOKENS).json()["results"]] == [other["id"]]
