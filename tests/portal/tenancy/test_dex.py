"""Single sign-on against Dex, a real OpenID provider built from its Go module (issue 32 item 9):
a client secret as `openssl rand -base64 32` makes it (with `+`, `/` and `=`) failed every sign-in
("Invalid client credentials"), since the portal put it into the Basic header without the
form-encoding RFC 6749 2.3.1 asks for and Dex read `+` as a space; and each failed callback then
counted against the address, so the admin's right password was refused 429 for 15 minutes.

Dex comes from `scripts/dex-build` (the commit pinned in scripts/dex.d, cached in
~/.cache/allot-dex/; `.ci/run` builds it). Without it these tests are skipped, except in CI."""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.request
from html import unescape
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model

from agents.ports import free_port
from tests.binaries import wait_for_build
from tests.paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.built, pytest.mark.django_db(transaction=True)]
SECRET = "JIf+c/2N/l8vH0rS9y3bGx+ZqM1eYk7T4wQpA5dUo6c="  # as openssl rand -base64 32 makes one
# Dex's own development password ("password"), bcrypt as its staticPasswords take it
PASSWORD, HASH = "password", "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W"
FORM = re.compile(r'<form[^>]*action="([^"]+)"', re.I)


def _dex_binary() -> Path:
    wait_for_build()  # .ci/run may be building it in the background
    try:
        out = subprocess.run([str(ROOT / "scripts" / "dex-build")], capture_output=True,
                             text=True, timeout=1500, check=True)  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        if os.environ.get("CI"):
            pytest.fail(f"Dex could not be built: {exc}")
        pytest.skip(f"Dex could not be built here: {exc}")
    return Path(out.stdout.strip())


@pytest.fixture
def dex(live_server, tmp_path, settings):
    """Dex on 127.0.0.1 with the portal as a static client (a secret with + / =) and one user."""
    binary, port = _dex_binary(), free_port()
    issuer = f"http://127.0.0.1:{port}/dex"
    (tmp_path / "dex.yaml").write_text(f"""
issuer: {issuer}
storage: {{type: memory}}
web: {{http: "127.0.0.1:{port}"}}
oauth2: {{skipApprovalScreen: true}}
enablePasswordDB: true
staticClients:
- id: allot
  secret: "{SECRET}"
  name: Allot
  redirectURIs: ["{live_server.url}/oidc/callback/"]
staticPasswords:
- email: dana@uni.example
  hash: "{HASH}"
  username: dana
  userID: 6c0f0d1e-1b0a-4d5e-9a6f-2f8a3c1b7d40
""")
    with open(tmp_path / "dex.log", "w") as log:  # the child keeps its own descriptor
        process = subprocess.Popen([str(binary), "serve", str(tmp_path / "dex.yaml")],
                                   stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{issuer}/.well-known/openid-configuration", timeout=2)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"Dex did not start:\n{(tmp_path / 'dex.log').read_text()}")
            time.sleep(0.2)
    settings.ALLOT_OIDC_ISSUER, settings.ALLOT_OIDC_CLIENT_ID = issuer, "allot"
    settings.ALLOT_OIDC_CLIENT_SECRET = SECRET
    settings.ALLOT_OIDC_USERNAME_CLAIM = "email"
    settings.ALLOT_OIDC_SCOPES = "openid profile email"
    from portal.tenancy import oidc

    oidc._client.cache_clear()
    yield live_server.url
    process.terminate()
    process.wait(10)
    oidc._client.cache_clear()


def _sign_in_through_dex(portal: str, password: str = PASSWORD) -> requests.Response:
    """The browser's way: the portal's SSO button, Dex's password form, back to the portal."""
    session = requests.Session()
    page = session.get(f"{portal}/oidc/login/", timeout=30)
    assert page.status_code == 200 and "password" in page.text.lower(), page.text[:500]
    action = unescape(FORM.search(page.text).group(1))
    target = requests.compat.urljoin(page.url, action)
    return session.post(target, data={"login": "dana@uni.example", "password": password},
                        timeout=30)  # fmt: skip


def test_dex_signs_a_user_in_with_a_secret_holding_plus_slash_and_equals(dex):
    answer = _sign_in_through_dex(dex)
    assert answer.status_code == 200 and answer.url.rstrip("/") == dex, answer.text[:500]
    assert get_user_model().objects.filter(username="dana@uni.example").exists()


def test_a_providers_refusal_never_locks_the_admin_out_of_password_sign_in(
    dex, settings, cluster_admin, api
):
    settings.ALLOT_OIDC_CLIENT_SECRET = SECRET.replace("+", "-")  # a misconfigured portal
    from portal.tenancy import oidc

    oidc._client.cache_clear()
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        refused = _sign_in_through_dex(dex)
        assert refused.status_code == 502 and "not yours" in refused.text
    cluster_admin.set_password("x-right-password-1")
    cluster_admin.save()
    token = requests.post(f"{dex}/api/v1/auth/token/", timeout=30,
                          json={"username": "root", "password": "x-right-password-1"})  # fmt: skip
    assert token.status_code in (200, 201), token.text
    page = requests.Session()
    login = page.get(f"{dex}/login/", timeout=30)
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
    form = {"username": "root", "password": "x-right-password-1", "csrfmiddlewaretoken": csrf}
    signed = page.post(f"{dex}/login/", timeout=30, data=form)
    assert signed.status_code == 200 and "/login/" not in signed.url
