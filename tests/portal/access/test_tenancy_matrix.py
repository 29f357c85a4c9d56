"""Who may do what, endpoint by endpoint and page by page: one table, four personas.

The personas (STYLE.md): the site admin (`root`), a researcher of team-a (`bob`), a viewer of
team-a (`vera`) and an outsider, a researcher of team-b (`eve`). Outsiders get 404 (or lists
without team-a), viewers cannot write, researchers cannot change quotas or members; a bad
token gets 401. Every REST route and every page must have a row: a new one without a row fails
`test_every_route_has_a_row`.
"""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

pytestmark = pytest.mark.django_db
PERSONAS = ("admin", "researcher", "viewer", "outsider")
A = "/api/v1"

# (route name, method, path, body, statuses for admin, researcher, viewer, outsider)
REST = [
    ("node-list", "get", f"{A}/nodes/", None, (200, 200, 200, 200)),
    ("node-list", "post", f"{A}/nodes/", {"name": "n9", "gpus": 8}, (201, 403, 403, 403)),
    ("node-detail", "get", f"{A}/nodes/dgx1-1/", None, (200, 200, 200, 200)),
    ("node-detail", "patch", f"{A}/nodes/dgx1-2/", {"pool": "default"}, (200, 403, 403, 403)),
    ("node-detail", "delete", f"{A}/nodes/dgx1-2/", None, (204, 403, 403, 403)),
    ("topology-list", "get", f"{A}/topology/", None, (200, 200, 200, 200)),
    ("topology-list", "post", f"{A}/topology/", {"pool": "default", "levels": ["rack"]},
     (201, 403, 403, 403)),
    ("topology-detail", "get", f"{A}/topology/default/", None, (404, 404, 404, 404)),
    ("topology-detail", "patch", f"{A}/topology/default/", {"levels": ["rack"]},
     (404, 404, 404, 404)),
    ("department-list", "get", f"{A}/departments/", None, (200, 403, 403, 403)),
    ("department-list", "post", f"{A}/departments/", {"name": "dept-d", "quota": 1,
     "cpu_limit": "8"}, (201, 403, 403, 403)),
    ("department-detail", "get", f"{A}/departments/dept-x/", None, (404, 403, 403, 403)),
    ("department-detail", "patch", f"{A}/departments/dept-x/", {"cpu_limit": "8"},
     (404, 403, 403, 403)),
    ("department-detail", "delete", f"{A}/departments/dept-x/", None, (404, 403, 403, 403)),
    ("project-list", "get", f"{A}/projects/", None, (200, 200, 200, 200)),
    ("project-list", "post", f"{A}/projects/", {"name": "p9", "quota": 1}, (201, 403, 403, 403)),
    ("project-detail", "get", f"{A}/projects/team-a/", None, (200, 200, 200, 404)),
    ("project-detail", "patch", f"{A}/projects/team-a/", {"quota": 5}, (200, 403, 403, 404)),
    ("project-detail", "delete", f"{A}/projects/team-a/", None, (409, 403, 403, 404)),
    ("member-list", "get", f"{A}/projects/team-a/members/", None, (200, 200, 200, 404)),
    ("member-list", "post", f"{A}/projects/team-a/members/", {"username": "eve"},
     (201, 403, 403, 404)),
    ("member-detail", "delete", f"{A}/projects/team-a/members/vera/", None, (204, 403, 403, 404)),
    ("user-limit-list", "get", f"{A}/projects/team-a/user-limits/", None, (200, 200, 200, 404)),
    ("user-limit-list", "post", f"{A}/projects/team-a/user-limits/", {"max_gpus": 2},
     (201, 403, 403, 404)),
    # one that exists, as a teammate's override is to a researcher: tests/portal/api/
    # test_user_limits_api.py
    ("user-limit-detail", "get", f"{A}/projects/team-a/user-limits/999/", None,
     (404, 404, 404, 404)),
    ("user-limit-detail", "patch", f"{A}/projects/team-a/user-limits/999/", {"max_gpus": 1},
     (404, 403, 403, 404)),
    ("user-limit-detail", "delete", f"{A}/projects/team-a/user-limits/999/", None,
     (404, 403, 403, 404)),
    ("user-list", "get", f"{A}/users/", None, (200, 403, 403, 403)),
    ("webhook-list", "get", f"{A}/projects/team-a/webhooks/", None, (200, 403, 403, 404)),
    ("webhook-list", "post", f"{A}/projects/team-a/webhooks/", {"url": "https://hooks.example/h"},
     (201, 403, 403, 404)),
    ("webhook-detail", "get", f"{A}/projects/team-a/webhooks/1/", None, (404, 403, 403, 404)),
    ("webhook-detail", "delete", f"{A}/projects/team-a/webhooks/1/", None, (404, 403, 403, 404)),
    ("webhook-deliveries", "get", f"{A}/projects/team-a/webhooks/1/deliveries/", None,
     (404, 403, 403, 404)),
    ("budget-list", "get", f"{A}/budgets/", None, (200, 200, 200, 200)),
    ("budget-list", "post", f"{A}/budgets/", {"name": "b", "project": "team-a", "gpu_hours": 9},
     (201, 403, 403, 403)),
    ("budget-detail", "get", f"{A}/budgets/999/", None, (404, 404, 404, 404)),
    ("budget-detail", "patch", f"{A}/budgets/999/", {"gpu_hours": 5}, (404, 404, 404, 404)),
    ("budget-detail", "delete", f"{A}/budgets/999/", None, (404, 404, 404, 404)),
    ("my-notifications", "get", f"{A}/me/notifications/", None, (200, 200, 200, 200)),
    ("my-workspaces", "get", f"{A}/me/workspaces/", None, (200, 200, 200, 200)),
    # none on disk here, so a 404 for all; who may delete one that exists (bob, an admin, not
    # vera nor eve): tests/portal/web/test_workspaces.py
    ("workspace-detail", "delete", f"{A}/workspaces/team-a/bob/", None, (404, 404, 404, 404)),
    ("my-notifications", "patch", f"{A}/me/notifications/", {"email": False},
     (200, 200, 200, 200)),
    ("user-list", "post", f"{A}/users/", {"username": "zed", "password": "a-long-pass-42"},
     (201, 403, 403, 403)),
    ("job-list", "get", f"{A}/jobs/", None, (200, 200, 200, 200)),
    ("job-list", "post", f"{A}/jobs/", {"project": "team-a", "name": "new", "gpus": 1},
     (201, 201, 403, 404)),
    ("job-bulk", "post", f"{A}/jobs/bulk/",
     {"jobs": [{"project": "team-a", "name": "s1", "gpus": 1}]}, (201, 201, 403, 404)),
    ("job-detail", "get", f"{A}/jobs/team-a/secret-run/", None, (200, 200, 200, 404)),
    # secret-run is root's: another researcher of team-a reads it but does not change it, and
    # bob-run is bob's (issue 32 item 3: a job is changed by its owner and the project's admins)
    ("job-detail", "delete", f"{A}/jobs/team-a/secret-run/", None, (204, 403, 403, 404)),
    ("job-events", "get", f"{A}/jobs/team-a/secret-run/events/", None, (200, 200, 200, 404)),
    ("job-logs", "get", f"{A}/jobs/team-a/secret-run/logs/", None, (200, 200, 200, 404)),
    ("job-runs", "get", f"{A}/jobs/team-a/secret-run/runs/", None, (200, 200, 200, 404)),
    ("job-shell", "post", f"{A}/jobs/team-a/secret-run/shell/", None, (409, 403, 403, 404)),
    ("job-extend", "post", f"{A}/jobs/team-a/secret-run/extend/", None, (409, 403, 403, 404)),
    ("job-stop", "post", f"{A}/jobs/team-a/secret-run/stop/", None, (200, 403, 403, 404)),
    ("job-stop", "post", f"{A}/jobs/team-a/bob-run/stop/", None, (200, 200, 403, 404)),
    ("job-resume", "post", f"{A}/jobs/team-a/secret-run/resume/", None, (409, 403, 403, 404)),
    ("job-shares", "get", f"{A}/jobs/team-a/bob-run/shares/", None, (200, 200, 200, 404)),
    ("job-shares", "post", f"{A}/jobs/team-a/bob-run/shares/", {"everyone": True},
     (403, 201, 403, 404)),
    ("job-share", "delete", f"{A}/jobs/team-a/bob-run/shares/999/", None, (403, 404, 403, 404)),
    ("job-access", "post", f"{A}/jobs/team-a/bob-run/access/", {"reason": "stuck kernel"},
     (201, 403, 403, 404)),
    ("overview", "get", f"{A}/overview/", None, (200, 200, 200, 200)),
    ("audit-list", "get", f"{A}/audit/", None, (200, 403, 403, 403)),
    ("audit-list", "get", f"{A}/audit/?format=csv", None, (200, 403, 403, 403)),
    ("audit-list", "delete", f"{A}/audit/", None, (405, 403, 403, 403)),
    ("analytics-allocation", "get", f"{A}/analytics/allocation/", None, (200, 200, 200, 200)),
    ("accounting-report", "get", f"{A}/accounting/?group_by=user", None, (200, 200, 200, 200)),
    ("accounting-report", "get", f"{A}/accounting/?project=team-a", None, (200, 200, 200, 404)),
    ("scheduler-cycles", "get", f"{A}/scheduler/cycles/", None, (200, 403, 403, 403)),
    ("scheduler-cycles", "post", f"{A}/scheduler/cycles/", None, (200, 403, 403, 403)),
    ("auth-token", "post", f"{A}/auth/token/", {}, (400, 400, 400, 400)),
    ("user-detail", "get", f"{A}/users/bob/", None, (200, 403, 403, 403)),
    ("user-detail", "patch", f"{A}/users/bob/", {"is_active": True}, (200, 403, 403, 403)),
    ("user-detail", "delete", f"{A}/users/nobody/", None, (404, 403, 403, 403)),
    ("sso-rule-list", "get", f"{A}/sso/rules/", None, (200, 403, 403, 403)),
    ("sso-rule-list", "post", f"{A}/sso/rules/", {"group": "g", "project": "team-a"},
     (201, 403, 403, 403)),
    ("sso-rule-detail", "get", f"{A}/sso/rules/999999/", None, (404, 403, 403, 403)),
    ("sso-rule-detail", "delete", f"{A}/sso/rules/999999/", None, (404, 403, 403, 403)),
    # each persona's own tokens; another's is a 404 (tests/portal/security/test_tokens_isolation)
    ("my-token-list", "get", f"{A}/auth/tokens/", None, (200, 200, 200, 200)),
    ("my-token-detail", "get", f"{A}/auth/tokens/999999/", None, (404, 404, 404, 404)),
    ("my-token-detail", "delete", f"{A}/auth/tokens/999999/", None, (404, 404, 404, 404)),
    ("user-token-list", "get", f"{A}/users/bob/tokens/", None, (200, 403, 403, 403)),
    ("user-token-detail", "delete", f"{A}/users/bob/tokens/999999/", None, (404, 403, 403, 403)),
    ("reservation-list", "get", f"{A}/reservations/", None, (200, 200, 200, 200)),
    ("reservation-list", "post", f"{A}/reservations/", {"name": "r", "project": "team-a",
     "gpus": 2, "start": "2099-01-05T10:00:00Z", "end": "2099-01-05T12:00:00Z"},
     (201, 403, 403, 404)),  # the outsider: team-a is as missing, 404 naming the field
    ("reservation-detail", "get", f"{A}/reservations/999/", None, (404, 404, 404, 404)),
    ("reservation-detail", "patch", f"{A}/reservations/999/", {"gpus": 1}, (404, 404, 404, 404)),
    ("reservation-detail", "delete", f"{A}/reservations/999/", None, (404, 404, 404, 404)),
    ("what-if", "post", f"{A}/what-if/", {"changes": [{"kind": "drain", "node": "dgx1-1"}]},
     (200, 403, 403, 403)),
    # cluster admins only; the replay clock is off here (ALLOT_REPLAY_CLOCK), so absent for
    # them too (on: tests/portal/api/test_scheduler_clock_api.py)
    ("scheduler-clock", "get", f"{A}/scheduler/clock/", None, (404, 403, 403, 403)),
    ("scheduler-clock", "post", f"{A}/scheduler/clock/", {"advance_seconds": 60},
     (404, 403, 403, 403)),
]  # fmt: skip

# (route name, method, path, form, statuses for admin, researcher, viewer, outsider)
PAGES = [
    ("overview", "get", "/", None, (200, 200, 200, 200)),
    ("analytics", "get", "/analytics/", None, (200, 200, 200, 200)),
    ("accounting", "get", "/accounting/?group_by=user", None, (200, 200, 200, 200)),
    ("accounting", "get", "/accounting/?project=team-a", None, (200, 200, 200, 400)),
    ("login", "get", "/login/", None, (302, 302, 302, 302)),  # signed in already: onwards
    ("logout", "post", "/logout/", {}, (302, 302, 302, 302)),
    ("me", "get", "/me/", None, (200, 200, 200, 200)),
    ("my-workspaces", "get", "/me/workspaces/", None, (200, 200, 200, 200)),
    ("budgets", "get", "/budgets/", None, (200, 200, 200, 200)),
    ("reservations", "get", "/reservations/", None, (200, 200, 200, 200)),
    ("reservation-preview", "post", "/reservations/preview/", {}, (400, 403, 403, 403)),
    ("budget-new", "get", "/budgets/new/", None, (200, 403, 403, 403)),
    ("budget-new", "post", "/budgets/new/", {"name": "b", "project": "team-a", "gpu_hours": "9",
     "window": "month", "kind": "soft", "over": "wait"}, (302, 403, 403, 403)),
    ("budget-edit", "get", "/budgets/999/", None, (404, 403, 403, 403)),
    ("budget-delete", "post", "/budgets/999/delete/", {}, (404, 403, 403, 403)),
    ("departments", "get", "/departments/", None, (200, 403, 403, 403)),
    ("department-new", "get", "/departments/new/", None, (200, 403, 403, 403)),
    ("department-new", "post", "/departments/new/", {"name": "dept-d", "quota": "1"},
     (302, 403, 403, 403)),
    ("department-edit", "get", "/departments/dept-x/", None, (404, 403, 403, 403)),
    ("department-delete", "post", "/departments/dept-x/delete/", {}, (404, 403, 403, 403)),
    ("projects", "get", "/projects/", None, (200, 200, 200, 200)),
    ("project-new", "get", "/projects/new/", None, (200, 403, 403, 403)),
    ("project-detail", "get", "/projects/team-a/", None, (200, 200, 200, 404)),
    ("project-edit", "get", "/projects/team-a/edit/", None, (200, 403, 403, 404)),
    ("project-edit", "post", "/projects/team-a/edit/", {"quota": "5"}, (302, 403, 403, 404)),
    ("project-delete", "post", "/projects/team-a/delete/", {}, (302, 403, 403, 404)),
    ("member-add", "post", "/projects/team-a/members/", {"username": "eve"},
     (302, 403, 403, 404)),
    ("member-remove", "post", "/projects/team-a/members/vera/remove/", {},
     (302, 403, 403, 404)),
    ("user-limit-new", "get", "/projects/team-a/user-limits/new/", None, (200, 403, 403, 404)),
    ("user-limit-new", "post", "/projects/team-a/user-limits/new/", {"max_gpus": "2"},
     (302, 403, 403, 404)),
    ("user-limit-edit", "get", "/projects/team-a/user-limits/999/", None, (404, 403, 403, 404)),
    ("user-limit-delete", "post", "/projects/team-a/user-limits/999/delete/", {},
     (404, 403, 403, 404)),
    ("webhook-add", "post", "/projects/team-a/webhooks/", {"url": "http://127.0.0.1:9/h"},
     (302, 403, 403, 404)),
    ("webhook-delete", "post", "/projects/team-a/webhooks/1/delete/", {}, (404, 403, 403, 404)),
    ("nodes", "get", "/nodes/", None, (200, 200, 200, 200)),
    ("nodes", "post", "/nodes/", {"name": "n9", "gpus": "8"}, (302, 403, 403, 403)),
    ("node-update", "post", "/nodes/dgx1-2/", {"action": "cordon"}, (302, 403, 403, 403)),
    ("nodes", "post", "/nodes/", {"form": "topology", "topology_pool": "default",
                                  "topology_levels": "rack"}, (302, 403, 403, 403)),
    ("topology-delete", "post", "/nodes/topology/default/delete/", {}, (404, 403, 403, 403)),
    ("users", "get", "/users/", None, (200, 403, 403, 403)),
    ("audit", "get", "/audit/", None, (200, 403, 403, 403)),
    ("sso-rules", "get", "/sso/rules/", None, (200, 403, 403, 403)),
    ("sso-rules", "post", "/sso/rules/", {"group": "g", "project": "team-a", "role": "viewer"},
     (302, 403, 403, 403)),
    ("sso-rule-delete", "post", "/sso/rules/999999/delete/", {}, (404, 403, 403, 403)),
    ("oidc-login", "get", "/oidc/login/", None, (404, 404, 404, 404)),  # no single sign-on set up
    ("oidc-callback", "get", "/oidc/callback/", None, (404, 404, 404, 404)),
    ("user-password", "post", "/users/bob/password/", {"password": "a-long-pass-42"},
     (302, 403, 403, 403)),
    ("user-update", "post", "/users/bob/update/", {"action": "make-admin"}, (302, 403, 403, 403)),
    ("user-role", "post", "/users/bob/role/", {"project": "team-a", "role": "viewer"},
     (302, 403, 403, 403)),
    ("rules", "get", "/rules/", None, (200, 200, 200, 200)),
    ("jobs", "get", "/jobs/", None, (200, 200, 200, 200)),
    # a viewer, who may submit nowhere, gets a 403 saying why instead of a form it cannot use
    ("job-new", "get", "/jobs/new/", None, (200, 200, 403, 200)),
    ("job-new", "post", "/jobs/new/", {"project": "team-a", "name": "new", "gpus": "1"},
     (302, 302, 403, 200)),  # the outsider: the form again, saying why
    ("jupyter-new", "get", "/jupyter/new/", None, (200, 200, 403, 200)),
    ("job-detail", "get", "/jobs/team-a/secret-run/", None, (200, 200, 200, 404)),
    ("job-stop", "post", "/jobs/team-a/secret-run/stop/", {}, (302, 403, 403, 404)),
    ("job-resume", "post", "/jobs/team-a/secret-run/resume/", {}, (302, 403, 403, 404)),
    ("from-lab", "get", "/jobs/team-a/secret-run/hub/home", None, (302, 302, 302, 404)),
    ("job-delete", "post", "/jobs/team-a/secret-run/delete/", {}, (302, 403, 403, 404)),
    ("job-extend", "post", "/jobs/team-a/secret-run/extend/", {}, (302, 403, 403, 404)),
    ("session", "get", "/sessions/team-a/secret-run/lab", None, (503, 403, 403, 404)),
    ("session", "get", "/sessions/team-a/bob-run/lab", None, (403, 503, 403, 404)),
    ("session-share", "post", "/jobs/team-a/bob-run/share/", {"username": "*"},
     (403, 302, 403, 404)),
    ("session-unshare", "post", "/jobs/team-a/bob-run/share/999/end/", {}, (403, 404, 403, 404)),
    ("session-access", "post", "/jobs/team-a/bob-run/access/", {"reason": "stuck kernel"},
     (302, 403, 403, 404)),
    ("job-session-progress", "get", "/jobs/team-a/secret-run/session/", None,
     (200, 403, 403, 404)),
]  # fmt: skip


@pytest.fixture
def world(api, cluster_admin, nodes, team_a, team_b, member, viewer, outsider):
    admin = api(cluster_admin)
    for body in ({"project": "team-a", "name": "secret-run", "gpus": 1},
                 {"project": "team-b", "name": "b-run", "gpus": 1}):  # fmt: skip
        assert admin.post("/api/v1/jobs/", body, format="json").status_code == 201
    body = {"project": "team-a", "name": "bob-run", "gpus": 1}
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    return dict(zip(PERSONAS, (cluster_admin, member, viewer, outsider), strict=True))


def _cases(table):
    return [
        pytest.param(row, index, id=f"{row[1]} {row[2]} as {PERSONAS[index]}")
        for row in table
        for index in range(4)
    ]


@pytest.mark.parametrize(("row", "index"), _cases(REST))
def test_rest(world, api, row, index):
    _, method, path, body, expected = row
    client = api(world[PERSONAS[index]])
    response = getattr(client, method)(path, body, format="json")
    assert response.status_code == expected[index], response.content[:300]
    if PERSONAS[index] == "outsider" and response.status_code < 300:  # (a 404 echoes the path)
        assert b"secret-run" not in response.content and b'"team-a"' not in response.content


@pytest.mark.parametrize(("row", "index"), _cases(PAGES))
def test_pages(world, row, index):
    _, method, path, form, expected = row
    client = Client()
    client.force_login(world[PERSONAS[index]])
    response = getattr(client, method)(path, form) if form is not None else client.get(path)
    assert response.status_code == expected[index]
    if PERSONAS[index] == "outsider" and response.status_code == 200:
        assert b"secret-run" not in response.content


@pytest.mark.parametrize(
    "row", [r for r in REST if r[0] != "auth-token"], ids=lambda row: f"{row[1]} {row[2]}"
)
def test_a_bad_token_gets_401_everywhere_but_the_public_login(world, api, row):
    _, method, path, body, _ = row
    client = api()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    response = getattr(client, method)(path, body, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("row", REST, ids=lambda row: f"{row[1]} {row[2]}")
def test_no_credentials_get_401_except_the_login(world, api, row):
    name, method, path, body, _ = row
    response = getattr(api(), method)(path, body, format="json")
    assert response.status_code == (400 if name == "auth-token" else 401)


def _names(patterns, prefix="") -> set[str]:
    names = set()
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            names |= _names(pattern.url_patterns)
        elif isinstance(pattern, URLPattern) and pattern.name:
            names.add(pattern.name)
    return names


def test_every_route_has_a_row():
    from portal.api import urls as api_urls
    from portal.web import urls as web_urls

    assert _names(api_urls.urlpatterns) == {row[0] for row in REST}
    assert _names(web_urls.urlpatterns) == {row[0] for row in PAGES}
    assert get_resolver() is not None
