"""/sessions/{project}/{name}/: who gets in (the Jupyter itself is tested in tests/browser)."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def notebook(api, member, nodes):
    body = {"project": "team-a", "name": "nb", "gpus": 0.5, "type": "interactive",
            "ports": [8888]}  # fmt: skip
    assert api(member).post("/api/v1/jobs/", body, format="json").status_code == 201


def browser(user=None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


URL = "/sessions/team-a/nb/lab"


def test_anonymous_visitors_are_sent_to_sign_in(notebook):
    response = browser().get(URL)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_an_outsider_gets_404_as_if_the_job_did_not_exist(notebook, outsider):
    assert browser(outsider).get(URL).status_code == 404
    assert browser(outsider).get("/sessions/team-a/missing/lab").status_code == 404


def test_a_viewer_may_not_run_code_in_the_project(notebook, viewer):
    assert browser(viewer).get(URL).status_code == 403


def test_a_member_waits_on_a_page_that_says_why_until_the_server_answers(notebook, member):
    response = browser(member).get(URL)
    assert response.status_code == 503
    assert "waits for a GPU" in response.content.decode()


def test_the_job_page_links_to_the_session(notebook, member):
    page = browser(member).get("/jobs/team-a/nb/").content.decode()
    assert 'href="/sessions/team-a/nb/lab"' in page
