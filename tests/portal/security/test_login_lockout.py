"""Issue 22 item 3: password guessing is throttled by the client's real address and by account,
on every way in - POST /api/v1/auth/token/, /login/ and /admin/login/ - with django-axes: after
ALLOT_LOGIN_FAILURE_LIMIT (5) failures the account and the address are locked out for
ALLOT_LOGIN_LOCKOUT_MIN (15) minutes, even for the right password; each lockout is logged.
X-Forwarded-For is believed only as far as ALLOT_TRUSTED_PROXIES says."""

import logging
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db.models import F
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db
TOKEN = "/api/v1/auth/token/"
RIGHT = "x-test-password-1"  # the personas' password (tests/conftest.py)


@pytest.fixture(autouse=True)
def fresh_throttle():
    """The login throttle counts in the cache, which outlives each test's transaction."""
    cache.clear()
    yield
    cache.clear()


def token_login(api, username: str, password: str, forwarded: str | None = None):
    extra = {"HTTP_X_FORWARDED_FOR": forwarded} if forwarded else {}
    return api().post(TOKEN, {"username": username, "password": password}, format="json",
                      **extra)  # fmt: skip


def attempts():
    """django-axes' record of failed sign-ins (imported late: an app of the portal's settings)."""
    from axes.models import AccessAttempt

    return AccessAttempt.objects


def cool_off_passes(minutes: int = 16) -> None:
    """Every failure recorded happened `minutes` ago."""
    attempts().update(attempt_time=F("attempt_time") - timedelta(minutes=minutes))


# --- The token door -----------------------------------------------------------------------------


def test_ten_wrong_passwords_with_a_new_forwarded_for_each_are_locked_out(api, member):
    answers = [token_login(api, "bob", f"guess-{i}", forwarded=f"203.0.113.{i}").status_code
               for i in range(10)]  # fmt: skip
    assert answers[:4] == [401] * 4 and answers[5:] == [429] * 5, answers
    locked = token_login(api, "bob", "guess-x", forwarded="198.51.100.7")
    assert locked.status_code == 429
    assert "locked for 15 minutes" in locked.json()["detail"] and locked["Retry-After"] == "900"
    assert set(attempts().values_list("ip_address", flat=True)) == {"127.0.0.1"}


def test_the_right_password_is_refused_until_the_cool_off_passes(api, member):
    for i in range(5):
        token_login(api, "bob", f"guess-{i}")
    assert token_login(api, "bob", RIGHT).status_code == 429
    cool_off_passes(minutes=14)
    assert token_login(api, "bob", RIGHT).status_code == 429  # tries while locked: no extension
    cool_off_passes(minutes=2)
    response = token_login(api, "bob", RIGHT)
    assert response.status_code == 200 and response.json()["username"] == "bob"


def test_guessing_one_account_from_many_addresses_locks_the_account(api, member, settings):
    """Addresses the portal sees differently (behind one trusted proxy): the account still locks."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    for i in range(5):
        token_login(api, "bob", f"guess-{i}", forwarded=f"203.0.113.{i}")
    assert len(set(attempts().values_list("ip_address", flat=True))) == 5
    assert token_login(api, "bob", RIGHT, forwarded="198.51.100.7").status_code == 429
    assert token_login(api, "vera", "guess", forwarded="198.51.100.7").status_code == 401


def test_guessing_many_accounts_from_one_address_locks_the_address(api, member, viewer):
    for i in range(5):
        token_login(api, f"nobody-{i}", "guess")
    assert token_login(api, "vera", RIGHT).status_code == 429


def test_a_trusted_proxys_forwarded_address_is_the_client(api, member, settings):
    """ALLOT_TRUSTED_PROXIES=1: the address the proxy appended, not what the client wrote."""
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "NUM_PROXIES": 1}
    token_login(api, "bob", "guess", forwarded="10.9.9.9, 203.0.113.5")
    token_login(api, "bob", "guess", forwarded="not-an-address")  # a proxy that did not append
    assert sorted(attempts().values_list("ip_address", flat=True)) == [
        "127.0.0.1", "203.0.113.5"]  # fmt: skip


def test_the_rate_throttle_keys_on_the_real_address(api, member, monkeypatch):
    """ALLOT_LOGIN_RATE: a new X-Forwarded-For each try is the same client."""
    from rest_framework.throttling import SimpleRateThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"login": "3/min"})
    answers = [token_login(api, "bob", RIGHT, forwarded=f"203.0.113.{i}").status_code
               for i in range(4)]  # fmt: skip
    assert answers == [200, 200, 200, 429]


# --- The pages ----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_the_sign_in_pages_lock_out_too(cluster_admin, path):
    client = Client()
    for i in range(4):
        page = client.post(path, {"username": "root", "password": f"guess-{i}"})
        assert page.status_code == 200  # the form again, with its error
    locked = client.post(path, {"username": "root", "password": "guess-5"})
    assert locked.status_code == 429
    text = locked.content.decode()
    assert "Signing in is locked" in text and "locked for 15 minutes" in text
    right = client.post(path, {"username": "root", "password": RIGHT})
    assert right.status_code == 429 and "_auth_user_id" not in client.session
    cool_off_passes()
    assert client.post(path, {"username": "root", "password": RIGHT}).status_code == 302


def test_failures_count_across_the_doors(api, member):
    client = Client()
    for i in range(3):
        client.post("/login/", {"username": "bob", "password": f"guess-{i}"})
    for i in range(2):
        client.post("/admin/login/", {"username": "bob", "password": f"guess-{i}"})
    assert token_login(api, "bob", RIGHT).status_code == 429


def test_a_lockout_is_logged_with_the_account_and_the_address(api, member, caplog):
    with caplog.at_level(logging.WARNING, logger="axes"):
        for i in range(5):
            token_login(api, "bob", f"guess-{i}")
    lockouts = [r.getMessage() for r in caplog.records if "Locking out" in r.getMessage()]
    assert len(lockouts) == 1
    assert 'username: "bob"' in lockouts[0] and 'ip_address: "127.0.0.1"' in lockouts[0]
    assert "guess-" not in caplog.text  # never a password


@override_settings(AXES_FAILURE_LIMIT=5)
def test_a_few_mistakes_do_not_lock_anyone_out(api, member):
    for i in range(4):
        assert token_login(api, "bob", f"guess-{i}").status_code == 401
    assert token_login(api, "bob", RIGHT).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_sign_in_page_locks_out_under_asgi_too(cluster_admin):
    """The served portal runs the middleware's async path (AxesMiddleware.__acall__)."""
    from asgiref.sync import async_to_sync
    from django.test import AsyncClient

    async def tries():
        client = AsyncClient()
        for i in range(5):
            await client.post("/login/", {"username": "root", "password": f"guess-{i}"})
        return await client.post("/login/", {"username": "root", "password": RIGHT})

    locked = async_to_sync(tries)()
    assert locked.status_code == 429 and b"Signing in is locked" in locked.content
