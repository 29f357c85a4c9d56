"""A notebook is its owner's alone (issue 32 item 3): a teammate researcher read another's secret
environment and files and ran code in their kernel, and job pages offered them Stop and Delete on
others' jobs. Now sharing is explicit, revocable and audited, and an admin opens another's
notebook only through an audited "Access server" that its owner sees."""

from __future__ import annotations

import pytest
from django.test import Client

from portal.audit.models import AuditEntry
from portal.jobs.models import Job
from tests.conftest import _user
from tests.portal.web import test_session_proxy as proxy_tests

pytestmark = pytest.mark.django_db
notebook = proxy_tests.notebook  # bob's notebook team-a/nb (the proxy tests' fixtures)
pod_notebook = proxy_tests.pod_notebook
agents_session = proxy_tests.agents_session
URL = "/sessions/team-a/nb/lab"
A = "/api/v1/jobs/team-a/nb"


@pytest.fixture
def teammate(team_a):
    """Another researcher of team-a."""
    return _user("rita", project=team_a, role="researcher")


def _browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_teammate_neither_opens_nor_changes_anothers_notebook(
    notebook, teammate, agents_session, api
):
    assert _browser(teammate).get(URL).status_code == 403
    for method, path in (("post", f"{A}/stop/"), ("delete", f"{A}/"), ("post", f"{A}/extend/")):
        answer = getattr(api(teammate), method)(path, format="json")
        assert answer.status_code == 403, (path, answer.content)
    assert Job.objects.get(name="nb").status == "Running"
    page = _browser(teammate).get("/jobs/team-a/nb/").content.decode()
    assert 'id="stop-job"' not in page and 'id="delete-job"' not in page
    assert 'id="open-session"' not in page and 'id="share-form"' not in page


def test_the_owner_shares_with_a_teammate_and_revokes_it(
    notebook, member, teammate, agents_session, api
):
    shared = api(member).post(f"{A}/shares/", {"username": "rita"}, format="json")
    assert shared.status_code == 201 and shared.json()["username"] == "rita"
    assert _browser(teammate).get(URL).status_code == 200
    listed = api(teammate).get(f"{A}/shares/").json()
    assert [(g["kind"], g["username"], g["granted_by"]) for g in listed] == [
        ("share", "rita", "bob")
    ]
    assert api(teammate).delete(f"{A}/shares/{shared.json()['id']}/").status_code == 403
    assert api(member).delete(f"{A}/shares/{shared.json()['id']}/").status_code == 204
    assert _browser(teammate).get(URL).status_code == 403
    actions = list(AuditEntry.objects.values_list("action", flat=True))
    assert "job.session_shared" in actions and "job.session_unshared" in actions
    events = list(Job.objects.get(name="nb").events.values_list("message", flat=True))
    assert "notebook shared with rita by bob" in events


def test_sharing_with_the_whole_project_admits_its_researchers_not_its_viewers(
    notebook, member, teammate, viewer, agents_session, api
):
    assert api(member).post(f"{A}/shares/", {"everyone": True}, format="json").status_code == 201
    assert _browser(teammate).get(URL).status_code == 200
    assert _browser(viewer).get(URL).status_code == 403


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"username": "vera"}, 400, "username"),  # a viewer runs no code
        ({"username": "nobody-here"}, 404, "username"),
        ({}, 400, "username"),
        ({"username": "rita", "everyone": True}, 400, "username"),
        ({"everyone": "yes"}, 400, "everyone"),
    ],
)
def test_a_bad_share_is_a_4xx_naming_the_field(
    notebook, member, teammate, viewer, api, body, status, field
):
    answer = api(member).post(f"{A}/shares/", body, format="json")
    assert answer.status_code == status and field in answer.json(), answer.content


def test_an_admins_access_is_audited_shown_to_the_owner_and_ends(
    notebook, member, owner, agents_session, api, settings
):
    """`owner` is alice, an admin of team-a; the notebook is bob's."""
    assert _browser(owner).get(URL).status_code == 403  # not without the explicit action
    refused = api(owner).post(f"{A}/access/", {"reason": "  "}, format="json")
    assert refused.status_code == 400 and "reason" in refused.json()
    granted = api(owner).post(f"{A}/access/", {"reason": "stuck kernel, asked by bob"},
                              format="json")  # fmt: skip
    assert granted.status_code == 201 and granted.json()["url"].endswith("/sessions/team-a/nb/lab")
    assert _browser(owner).get(URL).status_code == 200
    entry = AuditEntry.objects.get(action="job.session_accessed")
    assert entry.note == "stuck kernel, asked by bob"
    page = _browser(member).get("/jobs/team-a/nb/").content.decode()
    assert "alice (admin) opened this notebook until" in page and "stuck kernel" in page
    from portal.jobs.models import SessionGrant

    SessionGrant.objects.update(expires_at=entry.time)  # its hour is over
    assert _browser(owner).get(URL).status_code == 403
    assert api(member).post(f"{A}/access/", {"reason": "x"}, format="json").status_code == 403


def test_the_owners_page_shares_and_an_admins_page_offers_access(
    notebook, member, owner, teammate, agents_session
):
    bob = _browser(member)
    page = bob.get("/jobs/team-a/nb/").content.decode()
    assert 'id="share-form"' in page and '<option value="rita">rita</option>' in page
    assert 'id="access-server"' not in page
    assert bob.post("/jobs/team-a/nb/share/", {"username": "rita"}).status_code == 302
    assert _browser(teammate).get(URL).status_code == 200
    admin_page = _browser(owner).get("/jobs/team-a/nb/").content.decode()
    assert 'id="access-server"' in admin_page and 'id="share-form"' not in admin_page
    answer = _browser(owner).post("/jobs/team-a/nb/access/", {"reason": "support"})
    assert answer.status_code == 302 and answer["Location"].endswith("/sessions/team-a/nb/lab")
