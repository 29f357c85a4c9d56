"""Single sign-on with OpenID Connect against a real provider (django-oauth-toolkit, run by
tests/oidc_provider in a subprocess): the whole authorization code flow through the portal's
live server with a real HTTP client - first sign-in creates the account, the groups claim gives
project roles by the admins' rules and a later sign-in follows changed groups, sign-out ends
both sessions, and expired or forged ID tokens are refused."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.signals import user_logged_in, user_login_failed

from portal.tenancy.models import GroupRoleRule, Membership, Project, Source, SSOIdentity
from tests.oidc_provider.flow import sign_in, sign_out
from tests.oidc_provider.harness import CLIENT_ID, CLIENT_SECRET, Provider

PASSWORD = "provider-password-1"


@pytest.fixture(scope="module")
def idp(tmp_path_factory):
    """The identity provider, with carol (ml-team, ops) and dave (ml-team)."""
    with Provider(tmp_path_factory.mktemp("idp")) as provider:
        provider.user("carol", PASSWORD, "ml-team", "ops", email="carol@uni.example")
        provider.user("dave", PASSWORD, "ml-team")
        yield provider


def use_provider(settings, provider: Provider) -> None:
    settings.ALLOT_OIDC_ISSUER = provider.issuer
    settings.ALLOT_OIDC_CLIENT_ID = CLIENT_ID
    settings.ALLOT_OIDC_CLIENT_SECRET = CLIENT_SECRET
    settings.ALLOT_OIDC_PROVIDER_NAME = "Uni SSO"


@pytest.fixture
def portal(transactional_db, live_server, settings, idp):
    """The portal's live server using `idp`, with projects vision, infra and shared and rules:
    ml-team -> researcher in vision, ml-leads -> admin in vision, ops -> viewer in infra."""
    use_provider(settings, idp)
    vision = Project.objects.create(name="vision", quota=4)
    infra = Project.objects.create(name="infra", quota=2)
    Project.objects.create(name="shared", quota=1)
    GroupRoleRule.objects.create(group="ml-team", project=vision, role="researcher")
    GroupRoleRule.objects.create(group="ml-leads", project=vision, role="admin")
    GroupRoleRule.objects.create(group="ops", project=infra, role="viewer")
    return live_server.url


def roles(username: str) -> dict[str, tuple[str, str]]:
    return {
        m.project.name: (m.role, m.source)
        for m in Membership.objects.filter(user__username=username).select_related("project")
    }


def test_first_sign_in_creates_the_account_with_the_roles_its_groups_give(portal, idp):
    assert not get_user_model().objects.filter(username="carol").exists()
    session, page = sign_in(portal, idp.url, "carol", PASSWORD)
    assert page.status_code == 200 and page.url == f"{portal}/", page.text[:500]
    assert "carol" in page.text and "Sign out" in page.text  # the overview, signed in
    carol = get_user_model().objects.get(username="carol")
    assert carol.email == "carol@uni.example"
    assert not carol.has_usable_password()  # signs in through the provider only
    identity = SSOIdentity.objects.get(user=carol)
    assert identity.issuer == idp.issuer and identity.subject  # found by (iss, sub) from now on
    assert roles("carol") == {"vision": ("researcher", "sso"), "infra": ("viewer", "sso")}
    assert session.get(f"{portal}/api/v1/projects/", timeout=30).status_code == 200
    me = session.get(f"{portal}/me/", timeout=30).text
    assert "You sign in with single sign-on" in me and "Change password" not in me


def test_a_later_sign_in_follows_the_changed_groups_and_keeps_hand_made_memberships(portal, idp):
    sign_in(portal, idp.url, "carol", PASSWORD)
    carol = get_user_model().objects.get(username="carol")
    shared = Project.objects.get(name="shared")
    Membership.objects.create(user=carol, project=shared, role="viewer")  # added by hand
    idp.user("carol", PASSWORD, "ml-team", "ml-leads")  # promoted; left ops
    try:
        _, page = sign_in(portal, idp.url, "carol", PASSWORD)
        assert page.url == f"{portal}/"
        assert roles("carol") == {
            "vision": ("admin", "sso"),  # the strongest of ml-team and ml-leads
            "shared": ("viewer", "local"),  # infra is gone: ops no longer in the claim
        }
        idp.user("carol", PASSWORD)  # in no group at all
        sign_in(portal, idp.url, "carol", PASSWORD)
        assert roles("carol") == {"shared": ("viewer", "local")}
        assert get_user_model().objects.filter(username="carol").count() == 1
    finally:
        idp.user("carol", PASSWORD, "ml-team", "ops", email="carol@uni.example")


def test_a_membership_added_by_hand_keeps_its_role_when_a_rule_names_its_project(portal, idp):
    dave = get_user_model().objects.create_user("dave-local-first", password=None)
    del dave  # not the provider's dave: the rule below must not touch other accounts
    sign_in(portal, idp.url, "dave", PASSWORD)
    dave = get_user_model().objects.get(username="dave")
    Membership.objects.filter(user=dave, project__name="vision").update(
        role="admin", source=Source.LOCAL
    )  # a cluster admin made dave a project admin by hand
    sign_in(portal, idp.url, "dave", PASSWORD)
    assert roles("dave") == {"vision": ("admin", "local")}


def test_sign_out_ends_the_portal_session_and_the_providers(portal, idp):
    session, _ = sign_in(portal, idp.url, "dave", PASSWORD)
    out = sign_out(portal, session)
    # the provider's end_session_endpoint (RP-initiated logout) sent the browser back to /login/
    assert [r.url.split("?")[0] for r in out.history][1:] == [f"{idp.url}/o/logout/"]
    assert out.url.startswith(f"{portal}/login/") and "Sign in with Uni SSO" in out.text
    assert session.get(f"{portal}/", timeout=30).url.startswith(f"{portal}/login/")
    # the provider asks for the password again: its session ended too
    again = session.get(f"{portal}/oidc/login/", timeout=30)
    assert again.url.startswith(f"{idp.url}/accounts/login/")


def test_a_callback_cannot_be_replayed_and_both_reach_djangos_sign_in_signals(portal, idp):
    seen = []

    def signed_in(sender, request, user, **kwargs):
        seen.append(("signed in", user.get_username(), request.path))

    def failed(sender, credentials, request=None, **kwargs):
        seen.append(("failed", credentials.get("username"), request.path))

    user_logged_in.connect(signed_in)  # as the audit log and django-axes listen
    user_login_failed.connect(failed)
    try:
        session, page = sign_in(portal, idp.url, "dave", PASSWORD)
        callback = next(r.url for r in page.history if "/oidc/callback/" in r.url)
        replay = session.get(callback, timeout=30, allow_redirects=False)
    finally:
        user_logged_in.disconnect(signed_in)
        user_login_failed.disconnect(failed)
    assert replay.status_code == 400
    assert "this sign-in was not started here" in replay.text
    assert seen == [("signed in", "dave", "/oidc/callback/"), ("failed", None, "/oidc/callback/")]


def test_a_local_account_of_the_same_name_is_not_taken_over(portal, idp):
    get_user_model().objects.create_user("dave", password="local-password-1", is_staff=True)
    _, page = sign_in(portal, idp.url, "dave", PASSWORD)
    assert page.status_code == 403
    assert "a local account named &#x27;dave&#x27; exists already" in page.text
    assert not SSOIdentity.objects.exists() and roles("dave") == {}


def test_a_wrong_password_at_the_provider_signs_nobody_in(portal, idp):
    _, page = sign_in(portal, idp.url, "dave", "not-the-password")
    assert page.url.startswith(f"{idp.url}/accounts/login/")
    assert "Wrong username or password" in page.text
    assert not get_user_model().objects.filter(username="dave").exists()


# --- Tokens the portal refuses ------------------------------------------------------------------


@pytest.fixture(scope="module")
def expiring_idp(tmp_path_factory):
    """A provider whose ID tokens expired ten minutes before they are issued (past the leeway)."""
    with Provider(tmp_path_factory.mktemp("idp-expired"), expire_s=-600) as provider:
        provider.user("dave", PASSWORD, "ml-team")
        yield provider


@pytest.fixture(scope="module")
def forging_idp(tmp_path_factory):
    """A provider that signs its ID tokens with a key its JWKS does not publish."""
    with Provider(tmp_path_factory.mktemp("idp-forged"), publish_other_key=True) as provider:
        provider.user("dave", PASSWORD, "ml-team")
        yield provider


def test_an_expired_id_token_is_refused(transactional_db, live_server, settings, expiring_idp):
    use_provider(settings, expiring_idp)
    session, page = sign_in(live_server.url, expiring_idp.url, "dave", PASSWORD)
    assert page.status_code == 400 and page.url.startswith(f"{live_server.url}/oidc/callback/")
    assert "Single sign-on failed: the ID token has expired." in page.text
    assert not get_user_model().objects.filter(username="dave").exists()
    assert session.get(f"{live_server.url}/", timeout=30).url.startswith(
        f"{live_server.url}/login/"
    )


def test_an_id_token_signed_with_another_key_is_refused(
    transactional_db, live_server, settings, forging_idp
):
    use_provider(settings, forging_idp)
    _, page = sign_in(live_server.url, forging_idp.url, "dave", PASSWORD)
    assert page.status_code == 400
    assert "the ID token&#x27;s signature is not the identity provider&#x27;s" in page.text
    assert not get_user_model().objects.filter(username="dave").exists()


# --- ID tokens made by hand, checked by the portal's client against the provider's real JWKS ---


def _id_token(idp: Provider, key_pem: str | None = None, header: dict | None = None, **changes):
    """An ID token for the portal with these claims changed, signed (RS256) by the provider's
    key or `key_pem`, with the kid the provider's JWKS gives its key."""
    import time

    from joserfc import jwt
    from joserfc.jwk import RSAKey

    now = int(time.time())
    claims = {"iss": idp.issuer, "sub": "42", "aud": CLIENT_ID, "iat": now, "exp": now + 300,
              "nonce": "the-nonce", "preferred_username": "mallory",
              "groups": ["ml-team"]}  # fmt: skip
    claims.update(changes)
    provider_key = RSAKey.import_key(idp.private_key)
    key = RSAKey.import_key(key_pem) if key_pem else provider_key
    return jwt.encode({"alg": "RS256", "kid": provider_key.thumbprint(), **(header or {})},
                      claims, key)  # fmt: skip


def _check(token: str):
    """What the callback does with the token endpoint's answer (nonce "the-nonce")."""
    from portal.tenancy import oidc

    answer = {"id_token": token, "access_token": "an-access-token", "token_type": "Bearer"}
    return oidc.client().parse_id_token(answer, nonce="the-nonce", leeway=oidc.LEEWAY_S)


def _refusal(token: str) -> str:
    from joserfc.errors import JoseError

    from portal.web.sso import _token_refusal

    with pytest.raises(JoseError) as refused:
        _check(token)
    return _token_refusal(refused.value)


def test_hand_made_id_tokens_are_checked_against_the_providers_keys(settings, idp):
    from tests.oidc_provider.harness import new_rsa_key

    use_provider(settings, idp)
    assert _check(_id_token(idp))["preferred_username"] == "mallory"  # the control: accepted

    genuine = _id_token(idp)
    head, _, signature = genuine.split(".")
    other = _id_token(idp, groups=["ml-leads", "admins"]).split(".")[1]
    assert _refusal(f"{head}.{other}.{signature}") == (
        "the ID token's signature is not the identity provider's"
    )  # its claims changed after signing
    assert _refusal(_id_token(idp, key_pem=new_rsa_key())) == (
        "the ID token's signature is not the identity provider's"
    )  # signed with another key under the provider's kid
    assert _refusal(_id_token(idp, exp=int(__import__("time").time()) - 120)) == (
        "the ID token has expired"
    )  # past the 60 s leeway
    for changes, reason in [
        ({"aud": "another-client"}, "Missing claim: 'azp'"),  # for another client
        ({"nonce": "replayed"}, "Invalid claim: 'nonce'"),  # from another sign-in
        ({"iss": "http://127.0.0.1:1/o"}, "Invalid claim: 'iss'"),  # from another issuer
    ]:
        assert _refusal(_id_token(idp, **changes)) == f"the ID token is not valid ({reason})"


def test_an_unsigned_id_token_is_refused(settings, idp):
    import base64
    import json
    import time

    use_provider(settings, idp)

    def part(value: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(time.time())
    claims = {"iss": idp.issuer, "sub": "42", "aud": CLIENT_ID, "iat": now, "exp": now + 300,
              "nonce": "the-nonce"}  # fmt: skip
    with pytest.raises(Exception) as refused:
        _check(f"{part({'alg': 'none'})}.{part(claims)}.")
    assert "none" in str(refused.value).lower() or "algorithm" in str(refused.value).lower()


# --- Passwords turned off ------------------------------------------------------------------------


def test_with_local_login_off_passwords_are_refused_everywhere_but_sso_and_tokens_work(
    portal, idp, settings, client
):
    from portal.tenancy import services

    settings.ALLOT_LOCAL_LOGIN = False
    admin = get_user_model().objects.create_user("root", password="root-password-1",
                                                 is_staff=True, is_superuser=True)  # fmt: skip
    page = client.get("/login/")
    assert "Sign in with Uni SSO" in page.text and 'name="password"' not in page.text
    credentials = {"username": "root", "password": "root-password-1"}
    for path in ("/login/", "/admin/login/"):
        refused = client.post(path, credentials)
        assert refused.status_code == 403, path
        assert "Password sign-in is turned off on this portal: sign in with Uni SSO." in (
            refused.text
        )
    refused = client.post("/api/v1/auth/token/", credentials, content_type="application/json")
    assert refused.status_code == 403
    assert refused.json()["detail"].startswith("Password sign-in is turned off on this portal")
    assert "_auth_user_id" not in client.session

    _, key = services.issue_token(admin, "ci")  # made on /me/ before: still good
    answer = client.get("/api/v1/projects/", headers={"Authorization": f"Token {key}"})
    assert answer.status_code == 200

    _, page = sign_in(portal, idp.url, "dave", PASSWORD)
    assert page.url == f"{portal}/" and roles("dave") == {"vision": ("researcher", "sso")}


def test_single_sign_on_not_set_up_shows_the_password_form_only(db, client, settings):
    settings.ALLOT_OIDC_ISSUER = ""
    page = client.get("/login/")
    assert 'name="password"' in page.text and "Sign in with" not in page.text
    assert client.get("/oidc/login/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


# --- The rules page ---------------------------------------------------------------------------


def test_cluster_admins_edit_the_rules_and_nobody_else_may(db, client, cluster_admin, member,
                                                           team_a):  # fmt: skip
    client.force_login(member)
    assert client.get("/sso/rules/").status_code == 403
    assert client.post("/sso/rules/", {"group": "g", "project": "team-a"}).status_code == 403
    client.force_login(cluster_admin)
    page = client.get("/users/")
    assert 'href="/sso/rules/"' in page.text
    made = client.post("/sso/rules/", {"group": "cv-lab", "project": "team-a", "role": "viewer"})
    assert made.status_code == 302
    rule = GroupRoleRule.objects.get()
    assert (rule.group, rule.project, rule.role) == ("cv-lab", team_a, "viewer")
    page = client.get("/sso/rules/")
    assert 'data-rule="cv-lab:team-a"' in page.text

    again = client.post("/sso/rules/", {"group": "cv-lab", "project": "team-a", "role": "admin"})
    assert again.status_code == 409
    assert "group &#x27;cv-lab&#x27; has a rule for project team-a already" in again.text
    bad = client.post("/sso/rules/", {"group": " ", "project": "nope", "role": "owner"})
    assert bad.status_code == 400
    assert 'id="err_group">This field is required.' in bad.text
    assert 'id="err_project">No project named &#x27;nope&#x27;.' in bad.text
    assert 'id="err_role">&quot;owner&quot; is not a valid choice.' in bad.text
    assert GroupRoleRule.objects.count() == 1

    client.force_login(member)
    assert client.post(f"/sso/rules/{rule.pk}/delete/").status_code == 403
    client.force_login(cluster_admin)
    assert client.post(f"/sso/rules/{rule.pk}/delete/").status_code == 302
    assert not GroupRoleRule.objects.exists()
    assert client.post(f"/sso/rules/{rule.pk}/delete/").status_code == 404


def test_the_rules_over_the_rest_api(db, api, cluster_admin, member, team_a):
    admin, researcher = api(cluster_admin), api(member)
    body = {"group": "cv-lab", "project": "team-a", "role": "viewer"}
    assert researcher.get("/api/v1/sso/rules/").status_code == 403
    assert researcher.post("/api/v1/sso/rules/", body, format="json").status_code == 403
    made = admin.post("/api/v1/sso/rules/", body, format="json")
    assert made.status_code == 201
    assert made.json() | {"created_at": None} == {"id": made.json()["id"], **body,
                                                  "created_at": None}  # fmt: skip
    again = admin.post("/api/v1/sso/rules/", body, format="json")
    assert again.status_code == 409
    assert again.json() == {"group": ["group 'cv-lab' has a rule for project team-a already"]}
    bad = admin.post("/api/v1/sso/rules/", {"group": "x" * 201, "project": "nope",
                                             "role": "owner"}, format="json")  # fmt: skip
    assert bad.status_code == 400
    assert bad.json() == {
        "group": ["Ensure this field has no more than 200 characters."],
        "project": ["No project named 'nope'."],
        "role": ['"owner" is not a valid choice.'],
    }
    listed = admin.get("/api/v1/sso/rules/").json()
    rows = listed["results"] if isinstance(listed, dict) else listed
    assert [(r["group"], r["project"], r["role"]) for r in rows] == [("cv-lab", "team-a", "viewer")]
    rule = made.json()["id"]
    assert researcher.delete(f"/api/v1/sso/rules/{rule}/").status_code == 403
    assert admin.delete(f"/api/v1/sso/rules/{rule}/").status_code == 204
    assert admin.get(f"/api/v1/sso/rules/{rule}/").status_code == 404


def test_an_unreachable_provider_is_said_plainly(db, client, settings):
    from agents.ports import free_port

    settings.ALLOT_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}/o"  # nothing listens there
    settings.ALLOT_OIDC_CLIENT_ID, settings.ALLOT_OIDC_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    page = client.get("/oidc/login/")
    assert page.status_code == 502
    assert "The identity provider cannot be reached: try again later." in page.text


def test_a_provider_calling_itself_another_issuer_is_refused(db, client, settings, idp):
    # the same provider reached by another name: its discovery document names 127.0.0.1
    settings.ALLOT_OIDC_ISSUER = idp.issuer.replace("127.0.0.1", "localhost")
    settings.ALLOT_OIDC_CLIENT_ID, settings.ALLOT_OIDC_CLIENT_SECRET = CLIENT_ID, CLIENT_SECRET
    page = client.get("/oidc/login/")
    assert page.status_code == 502
    assert (
        f"Single sign-on is misconfigured: the identity provider calls itself "
        f"&#x27;{idp.issuer}&#x27;, not &#x27;{settings.ALLOT_OIDC_ISSUER}&#x27; "
        "(ALLOT_OIDC_ISSUER)."
    ) in page.text


@pytest.fixture(scope="module")
def userinfo_idp(tmp_path_factory):
    """A provider that puts the groups at its userinfo endpoint only, not in the ID token."""
    directory = tmp_path_factory.mktemp("idp-userinfo")
    with Provider(directory, groups_in_id_token=False) as provider:
        provider.user("dave", PASSWORD, "ml-team", "ops")
        yield provider


def test_groups_sent_at_the_userinfo_endpoint_only_give_roles_too(
    portal, settings, userinfo_idp, monkeypatch
):
    from portal.tenancy import oidc

    asked = []
    real = oidc.groups_from_userinfo
    monkeypatch.setattr(
        oidc, "groups_from_userinfo", lambda *a: asked.append(real(*a)) or asked[-1]
    )
    use_provider(settings, userinfo_idp)
    _, page = sign_in(portal, userinfo_idp.url, "dave", PASSWORD)
    assert page.url == f"{portal}/"
    assert asked == [{"groups": ["ml-team", "ops"]}]  # the ID token had none
    assert roles("dave") == {"vision": ("researcher", "sso"), "infra": ("viewer", "sso")}
