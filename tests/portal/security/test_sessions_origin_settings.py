"""ALLOT_SESSIONS_ORIGIN and the portal's cookies as settings read them (issue 32 item 1): a bad
value stops the portal at start with the reason, and over HTTPS the portal's cookies carry the
`__Host-` prefix so that no sibling host (a notebook's origin) can set them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from portal.core.origins import OriginError, parse
from tests.paths import ROOT


def _settings(**env) -> subprocess.CompletedProcess:
    code = ("from django.conf import settings as s; "
            "print(s.SESSION_COOKIE_NAME, s.CSRF_COOKIE_NAME, s.ALLOT_SESSIONS_ORIGIN, "
            "s.ALLOWED_HOSTS)")  # fmt: skip
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_SESSIONS", "SESS"))}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"], cwd=ROOT,
        env=base | {"DJANGO_SETTINGS_MODULE": "portal.settings", "PYTHONPATH": str(ROOT)} | env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_over_https_the_portals_cookies_are_host_only_by_their_prefix():
    secure = _settings(DEBUG="0", SECRET_KEY="k" * 50, ALLOWED_HOSTS="allot.example.org")
    assert secure.returncode == 0, secure.stderr
    assert secure.stdout.split()[:2] == ["__Host-sessionid", "__Host-csrftoken"]
    plain = _settings(DEBUG="1")
    assert plain.stdout.split()[:2] == ["sessionid", "csrftoken"]


def test_the_sessions_origin_joins_the_allowed_hosts_apart_from_the_portals():
    answer = _settings(ALLOT_SESSIONS_ORIGIN="https://*.nb.example.org",
                       ALLOT_PORTAL_URL="https://allot.example.org")  # fmt: skip
    assert answer.returncode == 0, answer.stderr
    assert "'.nb.example.org'" in answer.stdout


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"ALLOT_SESSIONS_ORIGIN": "https://*.nb.example.org"}, "ALLOT_PORTAL_URL must be"),
        ({"ALLOT_SESSIONS_ORIGIN": "ftp://nb.example.org", "ALLOT_PORTAL_URL": "http://a.b"},
         "must start with http:// or https://"),
        ({"ALLOT_SESSIONS_ORIGIN": "https://nb.example.org/x", "ALLOT_PORTAL_URL": "http://a.b"},
         "must be an origin only"),
        ({"ALLOT_SESSIONS_ORIGIN": "http://*.localhost:8000",
          "ALLOT_PORTAL_URL": "http://abc.localhost:8000"}, "apart from the portal's"),
    ],
)  # fmt: skip
def test_a_bad_sessions_origin_stops_the_portal_saying_why(env, reason):
    answer = _settings(**env)
    assert answer.returncode != 0 and reason in answer.stderr


def test_a_sessions_host_is_recognised_by_its_key_and_port_only():
    origin = parse("http://*.localhost:8000")
    assert origin.key_of("0123abcd.localhost:8000") == "0123abcd"
    assert origin.key_of("0123abcd.localhost:8001") is None
    assert origin.key_of("localhost:8000") is None
    assert origin.key_of("127.0.0.1:8000") is None
    assert origin.key_of("x.y.localhost:8000") is None
    assert origin.origin_for("ab12") == "http://ab12.localhost:8000"
    one = parse("https://nb.example.org")
    assert one.key_of("nb.example.org") == "" and one.key_of("nb.example.org:443") == ""
    assert one.origin_for("ab12") == "https://nb.example.org"
    with pytest.raises(OriginError):
        parse("https://*")
