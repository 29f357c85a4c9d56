"""API tokens on the user's page in Chromium (issue 22 item 7): a researcher makes a named token
that expires in 30 days, sees its key once (and it works), finds it listed by name and first
characters after a reload, and revokes it after confirming - from then on it is a 401."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def api_status(server, key: str) -> tuple[int, str]:
    request = urllib.request.Request(server.url + "/api/v1/projects/",
                                     headers={"Authorization": f"Token {key}"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, ""
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read())["detail"]


def test_a_researcher_makes_copies_and_revokes_a_named_token(page, server, member, artifacts):
    sign_in(page, server, "bob")
    page.goto(server.url + "/me/")
    expect(page.locator("#tokens-table")).to_contain_text("No API tokens.")
    page.get_by_label("New token named").fill("laptop")
    page.get_by_label("expires").select_option(label="in 30 days")
    page.get_by_role("button", name="Create token").click()
    notice = page.locator("#new-token-notice")
    expect(notice).to_contain_text("Copy your new token “laptop” now: it is not shown again.")
    expect(page.get_by_label("Your new API token")).to_be_focused()  # in view, not the password
    key = page.get_by_label("Your new API token").input_value()
    assert key.startswith("allot_") and api_status(server, key) == (200, "")
    row = page.locator("#tokens-table tbody tr").first
    expect(row).to_contain_text("laptop")
    expect(row).to_contain_text(key[:12] + "…")
    page.screenshot(path=artifacts / "me-api-token-created.png", full_page=True)

    page.goto(server.url + "/me/")  # shown once
    expect(page.locator("#new-token-notice")).to_have_count(0)
    assert key not in page.content()
    questions = []
    page.on("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
    page.locator("#tokens-table").get_by_role("button", name="Revoke").click()
    expect(page.locator(".messages")).to_contain_text("Token 'laptop' revoked")
    assert questions and questions[0].startswith("Revoke the token laptop")
    expect(page.locator("#tokens-table")).to_contain_text("No API tokens.")
    assert api_status(server, key) == (401, "Token revoked (revoked by its owner): sign in again.")
    page.screenshot(path=artifacts / "me-api-token-revoked.png", full_page=True)


def test_a_bad_token_name_is_named_next_to_the_form(page, server, member, artifacts):
    sign_in(page, server, "bob")
    page.goto(server.url + "/me/")
    page.get_by_role("button", name="Create token").click()
    expect(page.locator("#err_name")).to_contain_text("Name: This field may not be blank.")
    expect(page.get_by_label("New token named")).to_have_attribute("aria-invalid", "true")
    page.screenshot(path=artifacts / "me-api-token-error.png", full_page=True)
