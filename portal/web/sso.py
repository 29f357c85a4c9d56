"""Signing in and out, with single sign-on (OpenID Connect) beside or instead of passwords.

`/oidc/login/` sends the browser to the identity provider; `/oidc/callback/` takes it back,
has the client check the ID token (portal.tenancy.oidc) and signs the account in through
`authenticate()` and `login()`, so django-axes and every listener of Django's sign-in signals
see it. `/logout/` ends the portal's session and, after a single sign-on, the provider's too.
With ALLOT_LOCAL_LOGIN=0, `LocalLoginGate` refuses every password sent to the portal.
Cluster admins edit the group -> role rules at `/sso/rules/`.
"""

from __future__ import annotations

import logging

import requests
from authlib.integrations.base_client import OAuthError
from django.conf import settings
from django.contrib import auth, messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.signals import user_login_failed
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST
from joserfc.errors import JoseError
from rest_framework.exceptions import APIException

from portal import access
from portal.api.serializers.sso import SSORuleSerializer
from portal.tenancy import oidc
from portal.tenancy.models import GroupRoleRule, Project, Role
from portal.web.forms import TEXT, field_errors, form_input

log = logging.getLogger(__name__)

SESSION_ID_TOKEN = "allot_oidc_id_token"  # for the provider's logout (id_token_hint)
SESSION_NEXT = "allot_oidc_next"
LOCAL_LOGIN_OFF = (
    "Password sign-in is turned off on this portal: sign in with {name}. API tokens made on "
    "your account page keep working."
)


def sign_in_context(request: HttpRequest) -> dict:
    """What the sign-in page shows besides the password form."""
    return {
        "sso": oidc.configured(),
        "sso_name": settings.ALLOT_OIDC_PROVIDER_NAME,
        "local_login": settings.ALLOT_LOCAL_LOGIN,
        "next": request.GET.get("next", ""),
    }


def local_login_off_message() -> str:
    return LOCAL_LOGIN_OFF.format(name=settings.ALLOT_OIDC_PROVIDER_NAME)


class SignIn(auth_views.LoginView):
    """/login/: the password form (unless ALLOT_LOCAL_LOGIN=0) and the single sign-on button."""

    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        return {**super().get_context_data(**kwargs), **sign_in_context(self.request)}


def _refused(request: HttpRequest, reason: str, status: int) -> HttpResponse:
    """The sign-in page again, saying why."""
    context = {**sign_in_context(request), "sso_error": reason, "next": ""}
    return render(request, "registration/login.html", context, status=status)


def sso_login(request: HttpRequest) -> HttpResponse:
    """Send the browser to the identity provider (a new state, nonce and PKCE verifier, kept in
    the session); `next` is where to land after."""
    if not oidc.configured():
        raise Http404("Single sign-on is not set up on this portal.")
    target = request.GET.get("next", "")
    if url_has_allowed_host_and_scheme(target, {request.get_host()}, request.is_secure()):
        request.session[SESSION_NEXT] = target
    else:
        request.session.pop(SESSION_NEXT, None)
    try:
        oidc.provider_metadata()
        redirect_uri = request.build_absolute_uri(reverse("oidc-callback"))
        return oidc.client().authorize_redirect(request, redirect_uri)
    except oidc.SignInRefused as exc:
        log.error("single sign-on: %s", exc)
        return _refused(request, f"Single sign-on is misconfigured: {exc}.", 502)
    except requests.RequestException as exc:
        log.error("single sign-on: the identity provider cannot be reached: %s", exc)
        return _refused(request, "The identity provider cannot be reached: try again later.", 502)


def sso_callback(request: HttpRequest) -> HttpResponse:
    """The provider sends the browser back here with a code: exchange it, check the ID token,
    sign the account in. A refused token, state or account is the sign-in page with the reason."""
    if not oidc.configured():
        raise Http404("Single sign-on is not set up on this portal.")
    try:
        token = oidc.client().authorize_access_token(request, leeway=oidc.LEEWAY_S)
        claims = dict(token.get("userinfo") or {})
        if not claims:
            raise OAuthError(description="the provider's answer holds no ID token")
        if settings.ALLOT_OIDC_GROUPS_CLAIM not in claims:  # some providers: at userinfo only
            claims.update(oidc.groups_from_userinfo(token, claims.get("sub")))
    except (OAuthError, JoseError, ValueError) as exc:
        reason = _token_refusal(exc)
        if not (isinstance(exc, OAuthError) and exc.error in PROVIDER_FAILURES):  # the person's
            log.warning("single sign-on refused from %s: %s", request.META.get("REMOTE_ADDR"),
                        reason)  # fmt: skip
            user_login_failed.send(sender=__name__, credentials={"username": None},
                                   request=request)  # fmt: skip
            return _refused(request, f"Single sign-on failed: {reason}.", 400)
        # The provider or the portal's configuration failed (e.g. invalid_client: a secret or
        # method it does not take), not the person: never counted against their address, which
        # locked everyone's password sign-in out for 15 minutes (issue 32 item 9).
        log.error("single sign-on: the identity provider refused the portal's request (%s); "
                  "check ALLOT_OIDC_CLIENT_ID, ALLOT_OIDC_CLIENT_SECRET and "
                  "ALLOT_OIDC_TOKEN_AUTH_METHOD", reason)  # fmt: skip
        return _refused(request, f"Single sign-on failed: {reason}. This is the portal's or the "
                                 "identity provider's fault, not yours: tell an admin.",
                        502)  # fmt: skip
    except requests.RequestException as exc:
        log.error("single sign-on: the identity provider cannot be reached: %s", exc)
        return _refused(request, "The identity provider cannot be reached: try again later.", 502)
    except oidc.SignInRefused as exc:  # the provider's configuration: not counted either
        log.error("single sign-on: %s", exc)
        return _refused(request, f"Single sign-on failed: {exc}.", 502)
    try:
        user = auth.authenticate(request, oidc_claims=claims)
    except oidc.SignInRefused as exc:
        log.warning("single sign-on refused for %s: %s", claims.get("sub"), exc)
        name = claims.get(settings.ALLOT_OIDC_USERNAME_CLAIM)
        credentials = {"username": name if isinstance(name, str) else None}
        user_login_failed.send(sender=__name__, credentials=credentials, request=request)
        return _refused(request, f"Single sign-on failed: {exc}.", 403)
    if getattr(request, "axes_locked_out", False):  # AxesMiddleware answers with the lockout
        return _refused(request, "Too many failed sign-ins from here.", 429)
    if user is None:
        return _refused(request, "Single sign-on failed: this account is disabled.", 403)
    auth.login(request, user)
    request.session[SESSION_ID_TOKEN] = token.get("id_token", "")
    return redirect(request.session.pop(SESSION_NEXT, "") or settings.LOGIN_REDIRECT_URL)


# What the provider answers when the portal's client or the provider is at fault, not the person
# (RFC 6749 5.2): never counted against their address.
PROVIDER_FAILURES = frozenset({
    "invalid_client", "unauthorized_client", "unsupported_grant_type", "invalid_scope",
    "server_error", "temporarily_unavailable",
})  # fmt: skip


def _token_refusal(exc: Exception) -> str:
    """Why the provider's answer was refused, for the person signing in."""
    if isinstance(exc, OAuthError):
        if exc.error == "mismatching_state":
            return "this sign-in was not started here, or was started too long ago: start again"
        return exc.description or exc.error or "the provider refused"
    if isinstance(exc, JoseError):
        if exc.error == "expired_token":
            return "the ID token has expired"
        if exc.error in ("bad_signature", "invalid_key_id"):
            return "the ID token's signature is not the identity provider's"
        return f"the ID token is not valid ({exc.description or exc.error})"
    return f"the ID token cannot be read ({exc})"


@require_POST
def sign_out(request: HttpRequest) -> HttpResponse:
    """End the portal session; after a single sign-on, end the provider's session too (its
    end_session_endpoint, when it has one), which sends the browser back to /login/."""
    id_token = request.session.get(SESSION_ID_TOKEN)
    auth.logout(request)
    if id_token and oidc.configured():
        try:
            url = oidc.logout_url(id_token, request.build_absolute_uri(reverse("login")))
        except (requests.RequestException, oidc.SignInRefused) as exc:
            log.warning("single sign-on: no logout at the identity provider: %s", exc)
            url = None
        if url:
            return redirect(url)
    return redirect(settings.LOGOUT_REDIRECT_URL)


class LocalLoginGate:
    """ALLOT_LOCAL_LOGIN=0: a password sent to /login/, /admin/login/ or POST
    /api/v1/auth/token/ is refused (403) with the reason, before anything checks it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not settings.ALLOT_LOCAL_LOGIN and request.method == "POST":
            if request.path == reverse("auth-token"):
                return JsonResponse({"detail": local_login_off_message()}, status=403)
            if request.path in (reverse("login"), reverse("admin:login")):
                return _refused(request, local_login_off_message(), 403)
        return self.get_response(request)


# --- Group -> role rules (cluster admins) ------------------------------------------------------


@login_required
def rules(request: HttpRequest) -> HttpResponse:
    """The single sign-on rules: members of a provider group get a role in a project. Checked by
    the REST API's serializer, so the page and /api/v1/sso/rules/ say the same."""
    if not access.can_manage_sso_rules(request.user):
        raise PermissionDenied
    errors, values, status = {}, {}, 200
    if request.method == "POST":
        values = request.POST
        data, errors = form_input(request.POST, {"group": TEXT, "project": TEXT, "role": TEXT})
        serializer = SSORuleSerializer(data=data)
        if not errors and serializer.is_valid():
            try:
                rule = oidc.create_rule(**serializer.validated_data)
                messages.success(request, f"Members of {rule.group} get {rule.role} in "
                                          f"{rule.project.name}.")  # fmt: skip
                return redirect("sso-rules")
            except APIException as exc:
                errors, status = field_errors(exc), exc.status_code
        errors = errors or field_errors(serializer.errors)
        status = status if status != 200 else 400
    context = {
        "page": "users",
        "rules": GroupRoleRule.objects.select_related("project"),
        "projects": Project.objects.order_by("name").values_list("name", flat=True),
        "roles": Role.choices,
        "errors": errors,
        "values": values,
        "sso": oidc.configured(),
        "groups_claim": settings.ALLOT_OIDC_GROUPS_CLAIM,
    }
    return render(request, "web/sso_rules.html", context, status=status)


@login_required
@require_POST
def rule_delete(request: HttpRequest, pk: int) -> HttpResponse:
    """Remove a rule (its memberships go at each member's next single sign-on)."""
    if not access.can_manage_sso_rules(request.user):
        raise PermissionDenied
    rule = GroupRoleRule.objects.filter(pk=pk).select_related("project").first()
    if rule is None:
        raise Http404("No such rule.")
    oidc.delete_rule(rule)
    messages.success(
        request,
        f"Rule removed: {rule.group} no longer gives {rule.role} in {rule.project.name} (from "
        "each member's next sign-in).",
    )
    return redirect("sso-rules")
