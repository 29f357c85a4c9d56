"""Single sign-on with OpenID Connect: the client, and what a sign-in does to accounts and roles.

The client is Authlib's (authorization code flow with PKCE S256, `state` and `nonce` kept in the
session): it reads the issuer's `/.well-known/openid-configuration` at the first sign-in and
checks each ID token against the issuer's JWKS - signature, `iss`, `aud`, `exp`, `iat`, `nonce`
and `at_hash` - so an expired, forged or replayed token never reaches `sign_in`.

An identity-provider account is found by its (issuer, subject), never by the username it sends:
the first sign-in creates a portal account named by the username claim (refused when a local
account already has that name, which it would otherwise take over), with no usable password.
At every sign-in the groups claim is matched against the cluster admins' `GroupRoleRule`s and
the memberships those rules granted (`Source.SSO`) are added, changed or removed to match;
memberships added by hand are never touched.
"""

from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote_plus

from authlib.integrations.django_client import OAuth
from authlib.oauth2.auth import encode_client_secret_post
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from portal.audit import services as audit
from portal.core.errors import conflict
from portal.tenancy.models import GroupRoleRule, Membership, Project, Role, Source, SSOIdentity

log = logging.getLogger(__name__)

LEEWAY_S = 60  # clock skew allowed between the provider and the portal (exp, iat)
TIMEOUT_S = 10  # each request to the provider
ROLE_STRENGTH = {Role.VIEWER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}
USERNAME_MAX = 150  # Django's User.username


class SignInRefused(Exception):
    """A sign-in the portal refuses; the message says why, to the person signing in."""


def configured() -> bool:
    """Whether single sign-on is set up (ALLOT_OIDC_ISSUER)."""
    return bool(settings.ALLOT_OIDC_ISSUER)


def client():
    """The OpenID Connect client for the current settings (one per issuer and client)."""
    return _client(
        settings.ALLOT_OIDC_ISSUER,
        settings.ALLOT_OIDC_CLIENT_ID,
        settings.ALLOT_OIDC_CLIENT_SECRET,
        settings.ALLOT_OIDC_SCOPES,
    )


@lru_cache(maxsize=8)
def _client(issuer: str, client_id: str, secret: str, scopes: str):
    registry = OAuth()
    return registry.register(
        "allot",
        client_id=client_id,
        client_secret=secret,
        server_metadata_url=f"{issuer}/.well-known/openid-configuration",
        client_kwargs={
            "scope": scopes,
            "code_challenge_method": "S256",
            "token_endpoint_auth_method": authenticate_client,
            "default_timeout": TIMEOUT_S,
        },
    )


def basic_credentials(client, method, uri, headers, body):
    """client_secret_basic as RFC 6749 (2.3.1) asks: the client id and secret each
    form-urlencoded, then joined and base64-encoded into the Basic header. Authlib encodes them
    as they are, so a secret with `+` (as `openssl rand -base64 32` makes) arrived at Dex as a
    space and every sign-in failed (issue 32 item 9)."""
    text = f"{quote_plus(client.client_id)}:{quote_plus(client.client_secret or '')}"
    headers["Authorization"] = "Basic " + base64.b64encode(text.encode()).decode("ascii")
    return uri, headers, body


SUPPORTED_AUTH = {"client_secret_basic": basic_credentials,
                  "client_secret_post": encode_client_secret_post}  # fmt: skip


def token_auth_method() -> str:
    """ALLOT_OIDC_TOKEN_AUTH_METHOD, else the first of the provider's advertised methods Allot
    supports (basic first; OpenID Discovery's default when it advertises none); SignInRefused
    when it supports none of them, naming what it does support."""
    if settings.ALLOT_OIDC_TOKEN_AUTH_METHOD:
        return settings.ALLOT_OIDC_TOKEN_AUTH_METHOD
    offered = provider_metadata().get("token_endpoint_auth_methods_supported") or [
        "client_secret_basic"
    ]
    for method in SUPPORTED_AUTH:
        if method in offered:
            return method
    raise SignInRefused(
        f"the identity provider takes client credentials as {', '.join(map(str, offered))}; "
        "Allot sends client_secret_basic or client_secret_post (ALLOT_OIDC_TOKEN_AUTH_METHOD)"
    )


def authenticate_client(client, method, uri, headers, body):
    """Authlib's client authentication for the token endpoint, by `token_auth_method`."""
    return SUPPORTED_AUTH[token_auth_method()](client, method, uri, headers, body)


def provider_metadata() -> dict:
    """The issuer's discovery document; its `issuer` must be ALLOT_OIDC_ISSUER (else every ID
    token's `iss` would be checked against another issuer's name)."""
    metadata = client().load_server_metadata()
    if metadata.get("issuer", "").rstrip("/") != settings.ALLOT_OIDC_ISSUER:
        raise SignInRefused(
            f"the identity provider calls itself {metadata.get('issuer')!r}, not "
            f"{settings.ALLOT_OIDC_ISSUER!r} (ALLOT_OIDC_ISSUER)"
        )
    return metadata


def logout_url(id_token: str, post_logout_redirect_uri: str) -> str | None:
    """The provider's end-session URL that ends its session too (RP-initiated logout), or None
    when the provider has no end_session_endpoint."""
    if not provider_metadata().get("end_session_endpoint"):
        return None
    return client().create_logout_url(
        post_logout_redirect_uri=post_logout_redirect_uri,
        id_token_hint=id_token,
        client_id=settings.ALLOT_OIDC_CLIENT_ID,
    )["url"]


# --- What a sign-in does -------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """One membership a sign-in added, changed or removed."""

    project: str
    action: str  # "added", "changed", "removed"
    role: str


def groups_from_userinfo(token: dict, subject: str) -> dict:
    """{groups claim: value} from the provider's userinfo endpoint, for providers that leave the
    groups out of the ID token; {} when it has no such endpoint or claim. The answer must be
    about the ID token's subject (OpenID Connect Core 5.3.2)."""
    if not provider_metadata().get("userinfo_endpoint"):
        return {}
    info = client().userinfo(token=token)
    if info.get("sub") != subject:
        raise SignInRefused("the userinfo endpoint answered for another subject than the ID token")
    claim = settings.ALLOT_OIDC_GROUPS_CLAIM
    return {claim: info[claim]} if claim in info else {}


def claimed_groups(claims: dict) -> set[str]:
    """The groups in the ID token's groups claim (ALLOT_OIDC_GROUPS_CLAIM): a list of names, or
    one name; a missing claim is no groups."""
    value = claims.get(settings.ALLOT_OIDC_GROUPS_CLAIM)
    if value is None:
        return set()
    if isinstance(value, str):
        return {value}
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return set(value)
    raise SignInRefused(
        f"the identity provider's {settings.ALLOT_OIDC_GROUPS_CLAIM!r} claim is not a list of "
        "group names"
    )


def claimed_username(claims: dict) -> str:
    """The new account's name: the username claim (ALLOT_OIDC_USERNAME_CLAIM), which must be a
    valid portal username."""
    name = claims.get(settings.ALLOT_OIDC_USERNAME_CLAIM)
    claim = settings.ALLOT_OIDC_USERNAME_CLAIM
    if not isinstance(name, str) or not name:
        raise SignInRefused(f"the identity provider sent no {claim!r} claim to name the account")
    if len(name) > USERNAME_MAX:
        raise SignInRefused(f"the {claim!r} claim is longer than {USERNAME_MAX} characters")
    try:
        UnicodeUsernameValidator()(name)
    except ValidationError:
        raise SignInRefused(
            f"the {claim!r} claim {name!r} is not a valid username (letters, digits and "
            "@ . + - _ only)"
        ) from None
    return name


def sign_in(claims: dict):
    """The portal account of the validated ID token `claims`, created at the first sign-in,
    its email and name refreshed and its rule-granted memberships matched to the groups claim.
    Raises SignInRefused with the reason."""
    issuer, subject = claims.get("iss"), claims.get("sub")
    if not (isinstance(issuer, str) and isinstance(subject, str) and subject):
        raise SignInRefused("the ID token names no subject")
    groups = claimed_groups(claims)
    users = get_user_model().objects
    try:
        with transaction.atomic():
            identity = (
                SSOIdentity.objects.select_for_update()
                .select_related("user")
                .filter(issuer=issuer, subject=subject)
                .first()
            )
            if identity is None:
                username = claimed_username(claims)
                if users.filter(username=username).exists():
                    raise SignInRefused(
                        f"a local account named {username!r} exists already, and single sign-on "
                        "does not take over local accounts: a cluster admin can rename or remove "
                        "it"
                    )
                user = users.create_user(username=username, password=None)  # unusable password
                identity = SSOIdentity.objects.create(user=user, issuer=issuer, subject=subject)
                audit.record("user.created", user, note=f"by single sign-on at {issuer}",
                             signing_in=user)  # fmt: skip
                log.info("single sign-on: created %s for %s at %s", username, subject, issuer)
            user = identity.user
            _refresh_profile(user, claims)
            identity.last_login = timezone.now()
            identity.save(update_fields=["last_login"])
            changes = apply_rules(user, groups)
    except IntegrityError:  # a concurrent first sign-in of the same name or subject
        raise SignInRefused("another sign-in of this account is under way: try again") from None
    for change in changes:
        log.info("single sign-on: %s %s %s as %s", user.get_username(), change.action,
                 change.project, change.role)  # fmt: skip
    return user


def _refresh_profile(user, claims: dict) -> None:
    fields = {"email": claims.get("email"), "first_name": claims.get("given_name"),
              "last_name": claims.get("family_name")}  # fmt: skip
    changed = []
    for field, value in fields.items():
        if isinstance(value, str) and value and getattr(user, field) != value[:150]:
            setattr(user, field, value[:150])
            changed.append(field)
    if changed:
        user.save(update_fields=changed)


def roles_for(groups: set[str]) -> dict[int, str]:
    """{project id: role} the rules give members of `groups` (the strongest role per project)."""
    roles: dict[int, str] = {}
    for rule in GroupRoleRule.objects.filter(group__in=groups):
        held = roles.get(rule.project_id)
        if held is None or ROLE_STRENGTH[rule.role] > ROLE_STRENGTH[held]:
            roles[rule.project_id] = rule.role
    return roles


SSO_NOTE = "by a single sign-on rule"  # the audit log's note on what the rules did


def apply_rules(user, groups: set[str]) -> list[Change]:
    """Make `user`'s rule-granted memberships what the rules give `groups`: add the missing,
    change the role of those whose role differs, remove those no rule gives any more. A
    membership added by hand stays as it is (its role too). Inside the caller's transaction."""
    wanted = roles_for(groups)
    held = {m.project_id: m for m in Membership.objects.select_for_update().filter(user=user)}
    names = dict(Project.objects.filter(id__in=set(wanted) | set(held)).values_list("id", "name"))
    changes = []
    for project_id, role in wanted.items():
        membership = held.get(project_id)
        if membership is None:
            added = Membership.objects.create(
                user=user, project_id=project_id, role=role, source=Source.SSO
            )
            audit.record("membership.added", added, changes={"role": [None, role]},
                         note=SSO_NOTE, signing_in=user)  # fmt: skip
            changes.append(Change(names[project_id], "added", role))
        elif membership.source == Source.SSO and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
            changes.append(Change(names[project_id], "changed", role))
    for project_id, membership in held.items():
        if membership.source == Source.SSO and project_id not in wanted:
            audit.record("membership.removed", membership, note=SSO_NOTE, signing_in=user,
                         changes={"role": [membership.role, None]})  # fmt: skip
            membership.delete()
            changes.append(Change(names[project_id], "removed", membership.role))
    return changes


class OIDCBackend(ModelBackend):
    """Signs in with the claims of an ID token the client has validated:
    `authenticate(request, oidc_claims=...)`. Through authenticate() so django-axes may refuse a
    locked-out address, and Django's signals see the sign-in; an inactive account is refused."""

    def authenticate(self, request, oidc_claims: dict | None = None, **kwargs):
        if oidc_claims is None:
            return None
        user = sign_in(oidc_claims)
        return user if self.user_can_authenticate(user) else None


# --- Rules (cluster admins, /sso/rules/) ----------------------------------------------------


def create_rule(group: str, project: Project, role: str) -> GroupRoleRule:
    """A new group -> role rule; 409 on `group` when the group has a rule for that project."""
    taken = conflict("group", f"group {group!r} has a rule for project {project.name} already")
    try:
        with transaction.atomic():
            if GroupRoleRule.objects.filter(group=group, project=project).exists():
                raise taken
            rule = GroupRoleRule.objects.create(group=group, project=project, role=role)
            audit.record("sso_rule.created", rule, changes={"group": [None, group],
                         "project": [None, project.name], "role": [None, role]})  # fmt: skip
            return rule
    except IntegrityError:
        raise taken from None


def delete_rule(rule: GroupRoleRule) -> None:
    """Remove a rule; the memberships it granted go at each member's next sign-in."""
    with transaction.atomic():
        audit.record("sso_rule.deleted", rule, changes={"group": [rule.group, None],
                     "role": [rule.role, None]})  # fmt: skip
        rule.delete()
