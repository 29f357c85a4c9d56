"""The authorization code flow as a browser goes through it, with a real HTTP client: the portal's
/oidc/login/, the provider's sign-in form, its authorize endpoint, the portal's callback."""

from __future__ import annotations

import re

import requests

CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def csrf_token(html: str) -> str:
    """The CSRF token of the first form of a Django page."""
    match = CSRF_INPUT.search(html)
    assert match, f"no CSRF token in the page:\n{html[:2000]}"
    return match.group(1)


def sign_in(
    portal_url: str,
    provider_url: str,
    username: str,
    password: str,
    session: requests.Session | None = None,
) -> tuple[requests.Session, requests.Response]:
    """(the client, the portal's last answer) after "Sign in with single sign-on" and the
    provider's form; when the provider still has a session, its form is skipped."""
    session = session or requests.Session()
    answer = session.get(f"{portal_url}/oidc/login/", timeout=30)
    if answer.url.startswith(f"{provider_url}/accounts/login/"):
        assert answer.status_code == 200, answer.text
        answer = session.post(
            answer.url,
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": csrf_token(answer.text),
            },
            timeout=30,
        )
    return session, answer


def sign_out(portal_url: str, session: requests.Session) -> requests.Response:
    """Press "Sign out" on the portal's overview."""
    page = session.get(f"{portal_url}/", timeout=30)
    return session.post(
        f"{portal_url}/logout/", data={"csrfmiddlewaretoken": csrf_token(page.text)}, timeout=30
    )
