"""Single sign-on in a real browser: Chromium clicks "Sign in with University SSO" on the
portal (daphne, configured by ALLOT_OIDC_* as an operator would), signs in on the real identity
provider's page (django-oauth-toolkit, tests/oidc_provider), lands on the overview signed in with
the project role its group gives, and signs out of both."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from portal.tenancy.models import GroupRoleRule, Membership, Project
from tests.oidc_provider.harness import CLIENT_ID, CLIENT_SECRET, Provider

PASSWORD = "provider-password-1"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    with Provider(tmp_path_factory.mktemp("idp")) as provider:
        provider.user("carol", PASSWORD, "ml-team", email="carol@uni.example")
        yield provider


@pytest.fixture(autouse=True)
def sso_env(monkeypatch, idp):
    """The portal's environment (read when `server` starts it) names the provider."""
    monkeypatch.setenv("ALLOT_OIDC_ISSUER", idp.issuer)
    monkeypatch.setenv("ALLOT_OIDC_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("ALLOT_OIDC_CLIENT_SECRET", CLIENT_SECRET)
    monkeypatch.setenv("ALLOT_OIDC_PROVIDER_NAME", "University SSO")


def test_sign_in_with_the_identity_provider_lands_on_the_overview(page, server, idp, artifacts):
    vision = Project.objects.create(name="vision", quota=4)
    GroupRoleRule.objects.create(group="ml-team", project=vision, role="researcher")
    violations = []
    page.on("console", lambda m: "Content-Security-Policy" in m.text and violations.append(m.text))

    page.goto(server.url + "/")
    page.wait_for_url(f"{server.url}/login/?next=/")
    page.screenshot(path=artifacts / "oidc-login-page.png")
    page.get_by_role("link", name="Sign in with University SSO").click()

    page.wait_for_url(f"{idp.url}/accounts/login/**")  # the provider's own page
    assert page.get_by_role("heading", name="Test Identity Provider").is_visible()
    page.get_by_label("Username").fill("carol")
    page.get_by_label("Password").fill(PASSWORD)
    page.screenshot(path=artifacts / "oidc-provider-page.png")
    page.get_by_role("button", name="Sign in").click()

    page.wait_for_url(server.url + "/")
    page.get_by_role("link", name="carol").wait_for()
    assert page.get_by_role("button", name="Sign out").is_visible()
    page.screenshot(path=artifacts / "oidc-signed-in-overview.png", full_page=True)
    carol = get_user_model().objects.get(username="carol")
    assert Membership.objects.get(user=carol).project == vision
    assert Membership.objects.get(user=carol).role == "researcher"

    page.get_by_role("link", name="Projects").click()
    page.get_by_role("link", name="vision").wait_for()

    page.get_by_role("button", name="Sign out").click()  # and out of the provider too
    page.wait_for_url(f"{server.url}/login/**")
    assert page.get_by_role("link", name="Sign in with University SSO").is_visible()
    page.get_by_role("link", name="Sign in with University SSO").click()
    page.wait_for_url(f"{idp.url}/accounts/login/**")  # asks for the password again
    assert violations == []


def test_a_cluster_admin_adds_a_rule_on_the_rules_page(page, server, cluster_admin, artifacts):
    from tests.browser.conftest import sign_in

    Project.objects.create(name="vision", quota=4)
    sign_in(page, server, "root")
    page.get_by_role("link", name="Users").click()
    page.get_by_role("link", name="Single sign-on rules").click()
    page.wait_for_url(f"{server.url}/sso/rules/")
    page.get_by_label("Group").fill("ml-team")
    page.get_by_label("Project").select_option("vision")
    page.get_by_label("Role").select_option("admin")
    page.get_by_role("button", name="Add rule").click()
    page.get_by_text("Members of ml-team get admin in vision.").wait_for()
    row = page.locator('tr[data-rule="ml-team:vision"]')
    assert row.inner_text().split() == ["ml-team", "vision", "admin", "Remove"]
    page.get_by_label("Group").fill("ml-team")  # the same again: a 409 under the field
    page.get_by_role("button", name="Add rule").click()
    page.get_by_text("group 'ml-team' has a rule for project vision already").wait_for()
    page.screenshot(path=artifacts / "oidc-rules-page.png", full_page=True)
    assert GroupRoleRule.objects.filter(group="ml-team", role="admin").count() == 1
