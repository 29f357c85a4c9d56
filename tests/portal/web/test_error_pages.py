"""The error handlers of issue 24 item 4 (the browser test shows them served): the 500 page needs
neither the session nor the database, and the API's unknown routes answer JSON."""

from __future__ import annotations

from django.test import RequestFactory

from portal.web import errors


def test_the_500_page_is_in_the_portals_layout_without_the_request():
    response = errors.server_error(RequestFactory().get("/jobs/"))
    page = response.content.decode()
    assert response.status_code == 500
    assert "Something went wrong" in page and 'href="/"' in page and "allot.css" in page


def test_the_apis_500_is_json():
    response = errors.server_error(RequestFactory().get("/api/v1/jobs/"))
    assert response.status_code == 500 and response["Content-Type"] == "application/json"
