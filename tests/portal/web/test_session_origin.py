"""Notebooks on an origin of their own (issue 32 items 1, 2 and 4): the hand-off from the portal
to a session's origin, what each origin serves, and what a notebook server may set.

The session's origin is `http://<key>.nb.testserver` here (`make run`: `http://<key>.localhost`).
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from portal.core.origins import parse, session_key
from tests.portal.web import test_session_proxy as proxy_tests

NAVIGATE = proxy_tests.NAVIGATE
running_notebook = proxy_tests.running_notebook
notebook = proxy_tests.notebook  # the fixtures of the proxy's tests
pod_notebook = proxy_tests.pod_notebook
agents_session = proxy_tests.agents_session

pytestmark = pytest.mark.django_db


@pytest.fixture
def own_origin(settings):
    settings.ALLOT_SESSIONS_ORIGIN = parse("http://*.nb.testserver")
    settings.ALLOT_PORTAL_URL = "http://testserver"
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, ".nb.testserver"]


def _host(project="team-a", name="nb") -> str:
    from portal.jobs.models import Job

    job = Job.objects.get(project__name=project, name=name)
    return f"{session_key(job.pk, project, name)}.nb.testserver"


def _portal(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _signed_in(portal: Client, host: str, path="/sessions/team-a/nb/lab") -> Client:
    """A browser on the session's origin after the hand-off (steps 1-3)."""
    notebook_side = Client(HTTP_HOST=host)
    first = notebook_side.get(path, headers=NAVIGATE)
    assert first.status_code == 302, first.content
    to_portal = urlsplit(first["Location"])
    assert to_portal.netloc == "testserver" and to_portal.path == "/sessions/team-a/nb/_allot/open"
    back = portal.get(f"{to_portal.path}?{to_portal.query}")
    assert back.status_code == 302, back.content
    handoff = urlsplit(back["Location"])
    assert handoff.netloc == host and handoff.path == "/sessions/team-a/nb/_allot/handoff"
    done = notebook_side.get(f"{handoff.path}?{handoff.query}")
    assert done.status_code == 302 and done["Location"] == path
    return notebook_side


def test_the_job_page_opens_the_lab_on_the_sessions_own_origin(own_origin, notebook, member):
    page = _portal(member).get("/jobs/team-a/nb/").content.decode()
    assert f'href="http://{_host()}/sessions/team-a/nb/lab"' in page


def test_the_hand_off_signs_the_browser_in_to_that_session_alone(
    own_origin, notebook, member, agents_session
):
    portal = _portal(member)
    browser = _signed_in(portal, _host())
    credential = browser.cookies["allot-notebook"]
    assert credential["path"] == "/sessions/team-a/nb/" and credential["httponly"]
    assert "sessionid" not in browser.cookies and "csrftoken" not in browser.cookies
    response = browser.get("/sessions/team-a/nb/lab")
    assert response.status_code == 200 and b"JupyterLab" in response.content
    assert agents_session == [("/sessions/team-a/nb/lab", "token t0ken")]


def test_a_ticket_is_taken_once_and_only_by_the_browser_that_asked_for_it(
    own_origin, notebook, member, agents_session
):
    """Nobody can push a ticket of theirs into another's browser (login CSRF): it needs the
    state the asking browser holds; nor use one twice."""
    host = _host()
    asking = Client(HTTP_HOST=host)
    to_portal = urlsplit(asking.get("/sessions/team-a/nb/lab", headers=NAVIGATE)["Location"])
    ticket = urlsplit(_portal(member).get(f"{to_portal.path}?{to_portal.query}")["Location"])
    other = Client(HTTP_HOST=host)  # no state, or another one
    assert other.get(f"{ticket.path}?{ticket.query}").status_code == 403
    other.get("/sessions/team-a/nb/lab", headers=NAVIGATE)  # its own state now
    assert other.get(f"{ticket.path}?{ticket.query}").status_code == 403
    assert asking.get(f"{ticket.path}?{ticket.query}").status_code == 302
    assert asking.get(f"{ticket.path}?{ticket.query}").status_code == 403  # used


def test_the_portal_sends_only_to_the_sessions_own_address(own_origin, notebook, member):
    ticket_page = _portal(member).get(
        "/sessions/team-a/nb/_allot/open?state=s&next=https://evil.example/x"
    )
    handoff = urlsplit(ticket_page["Location"])
    assert handoff.netloc == _host()
    from django.core import signing

    from portal.web.session_origin import TICKET_SALT

    data = signing.loads(parse_qs(handoff.query)["ticket"][0], salt=TICKET_SALT)
    assert data["n"] == "/sessions/team-a/nb/lab"  # not the foreign address


def test_an_outsider_and_a_viewer_get_no_ticket(own_origin, notebook, outsider, viewer):
    url = "/sessions/team-a/nb/_allot/open?state=s&next=/sessions/team-a/nb/lab"
    assert _portal(outsider).get(url).status_code == 404
    assert _portal(viewer).get(url).status_code == 403


def test_a_credential_works_only_on_its_own_sessions_host(
    own_origin, notebook, member, agents_session, api
):
    body = {"project": "team-a", "name": "nb2", "gpus": 0.5, "type": "interactive",
            "ports": [8888]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201
    running_notebook()
    browser = _signed_in(_portal(member), _host())
    credential = browser.cookies["allot-notebook"].value
    elsewhere = Client(HTTP_HOST=_host("team-a", "nb2"))
    elsewhere.cookies["allot-notebook"] = credential
    assert elsewhere.get("/sessions/team-a/nb2/lab").status_code == 404  # another job's
    assert elsewhere.get("/sessions/team-a/nb/lab").status_code == 404  # on another's host


def test_the_portals_host_serves_no_notebook_and_the_notebooks_no_portal(
    own_origin, notebook, member, agents_session
):
    portal = _portal(member)
    assert portal.get("/sessions/team-a/nb/api/contents/x.html").status_code == 404
    sent = portal.get("/sessions/team-a/nb/lab/tree?x=1", headers=NAVIGATE)
    assert sent.status_code == 302
    assert sent["Location"] == f"http://{_host()}/sessions/team-a/nb/lab/tree?x=1"
    browser = _signed_in(portal, _host())
    for path in ("/api/v1/users/bob/", "/login/", "/", "/admin/", "/static/allot/app.css"):
        assert browser.get(path).status_code == 404, path


def test_writes_come_only_from_the_sessions_own_pages(own_origin, notebook, member, agents_session):
    host = _host()
    browser = _signed_in(_portal(member), host)
    foreign = browser.post("/sessions/team-a/nb/api/kernels", data="{}",
                           content_type="application/json",
                           headers={"Origin": "http://0abc.nb.testserver"})  # fmt: skip
    assert foreign.status_code == 403 and b"not from http://" in foreign.content


def test_losing_access_ends_the_credential_at_once(
    own_origin, notebook, member, agents_session, team_a
):
    from portal.tenancy.models import Membership

    browser = _signed_in(_portal(member), _host())
    assert browser.get("/sessions/team-a/nb/lab").status_code == 200
    Membership.objects.filter(user=member, project=team_a).delete()
    assert browser.get("/sessions/team-a/nb/lab").status_code == 404
    member.is_active = False
    member.save()
    answer = browser.get("/sessions/team-a/nb/api/status")
    assert answer.status_code == 403 and b"no longer active" in answer.content


def test_signing_out_of_the_portal_signs_out_of_its_notebooks(
    own_origin, notebook, member, agents_session
):
    portal = _portal(member)
    browser = _signed_in(portal, _host())
    portal.post("/logout/")
    answer = browser.get("/sessions/team-a/nb/api/status")
    assert answer.status_code == 403 and b"signed out" in answer.content
    again = browser.get("/sessions/team-a/nb/lab", headers=NAVIGATE)
    assert again.status_code == 302 and urlsplit(again["Location"]).netloc == "testserver"


@pytest.mark.parametrize(
    "path",
    [
        "/sessions/team-a/nb/../../ml--vision/nb/api/contents/victim.txt",
        "/sessions/team-a/nb/..%2F..%2Fml--vision/nb/api/contents/victim.txt",
        "/sessions/team-a/nb/api/contents/%2e%2e/x",
        "/sessions/team-a/nb/./api/status",
    ],
)
def test_dot_segments_never_reach_the_server(notebook, member, agents_session, path):
    response = _portal(member).get(path)
    assert response.status_code == 400 and b"dot segment" in response.content
    assert agents_session == []


@pytest.mark.parametrize("raw", [b"/sessions/team-a/nb/api/contents/..%2Fx",
                                 b"/sessions/team-a/nb/api/contents/a%2fb",
                                 b"/sessions/team-a/nb/api/contents/a%5Cb",
                                 b"/sessions/team-a/nb/api/contents/a%00"])  # fmt: skip
def test_an_encoded_slash_backslash_or_nul_is_refused_as_a_server_hands_it_over(raw):
    """A real ASGI server hands the raw path over beside the decoded one (`raw_path`): an
    encoded slash decodes into a path of other segments than the browser's."""
    from urllib.parse import unquote

    from django.core.handlers.asgi import ASGIRequest

    from portal.web.sessions import unsafe_path

    path = unquote(raw.decode())
    scope = {"type": "http", "method": "GET", "path": path, "raw_path": raw, "root_path": "",
             "query_string": b"", "headers": [(b"host", b"testserver")]}  # fmt: skip
    assert "encoded slash" in unsafe_path(ASGIRequest(scope, None))
    clean = dict(scope, path="/sessions/team-a/nb/api/status",
                 raw_path=b"/sessions/team-a/nb/api/status")  # fmt: skip
    assert unsafe_path(ASGIRequest(clean, None)) is None


def test_without_an_origin_of_their_own_every_answer_is_sandboxed(notebook, member, agents_session):
    for path in ("/sessions/team-a/nb/lab", "/sessions/team-a/nb/files/x.html",
                 "/sessions/team-a/nb/api/contents"):  # fmt: skip
        policy = _portal(member).get(path)["Content-Security-Policy"]
        assert "sandbox" in policy and "allow-same-origin" not in policy


def test_a_server_sets_cookies_only_for_its_own_path_and_host():
    from portal.web.session_origin import safe_set_cookie

    root = "/sessions/team-a/nb/"
    assert safe_set_cookie("_xsrf=1; Path=/sessions/team-a/nb/", root) == (
        "_xsrf=1; Path=/sessions/team-a/nb/"
    )
    assert safe_set_cookie("u=1", root) == "u=1; Path=/sessions/team-a/nb/"
    assert safe_set_cookie("u=1; Path=/", root) is None
    assert safe_set_cookie("u=1; Path=/sessions/team-a/nb2/", root) is None
    assert safe_set_cookie("u=1; Domain=testserver; Path=/sessions/team-a/nb/", root) is None
    for name in ("sessionid", "csrftoken", "allot-notebook", "__Host-x"):
        assert safe_set_cookie(f"{name}=1; Path={root}", root) is None


def test_the_api_and_the_cli_give_a_notebooks_whole_address(
    own_origin, notebook, member, agents_session, api
):
    """Issue 34 item 13: a session's URL is absolute (its own origin), not a path."""
    from django.utils import timezone

    from portal.jobs.models import Job

    Job.objects.filter(name="nb").update(started_at=timezone.now())
    job = api(member).get("/api/v1/jobs/team-a/nb/").json()
    assert [u["url"] for u in job["urls"]] == [f"http://{_host()}/sessions/team-a/nb/"]


def test_jupyterlabs_shut_down_is_the_jobs_stop_not_a_failure(
    own_origin, notebook, member, agents_session
):
    """Issue 34 item 1: File > Shut Down made the job Failed ("the Jupyter server exited")."""
    from portal.jobs.models import Job, Status

    host = _host()
    browser = _signed_in(_portal(member), host)
    answer = browser.post("/sessions/team-a/nb/api/shutdown", headers={"Origin": f"http://{host}"})
    assert answer.status_code == 200
    job = Job.objects.get(name="nb")
    assert job.status == Status.STOPPED
    assert job.events.last().message.startswith("stopped by bob")
    assert agents_session == []  # the portal stops it; the server was not asked to exit


def test_a_teammate_the_notebook_is_shared_with_cannot_shut_it_down(
    own_origin, notebook, viewer, agents_session
):
    from portal.jobs.models import Job, Status
    from portal.web.sessions import shut_down

    answer = shut_down(viewer, Job.objects.get(name="nb"))
    assert answer.status_code == 403 and b"Only the owner" in answer.content
    assert Job.objects.get(name="nb").status == Status.RUNNING
