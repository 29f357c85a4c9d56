"""Budget pages in Chromium (issue 36): a cluster admin creates a hard term budget of a project
with the form (a bad term refused naming the field), and a member reads on the project page and
on their own page what it used, what is left and that it is spent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from portal.budgets.models import Budget
from portal.jobs.models import Job, JobRun, Status
from portal.tenancy.models import Project
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_an_admin_makes_a_budget_and_a_member_sees_it_spent(
    page, server, artifacts, cluster_admin, member
):
    team = Project.objects.get(name="team-a")
    now = timezone.now()
    job = Job.objects.create(project=team, name="big", gpus=8, status=Status.SUCCEEDED)
    JobRun.objects.create(job=job, number=1, gpus=8, started_at=now - timedelta(hours=2),
                          ended_at=now - timedelta(hours=1))  # fmt: skip
    sign_in(page, server, cluster_admin.username)
    page.goto(server.url + "/budgets/new/")
    page.get_by_label("Name", exact=True).fill("autumn")
    page.get_by_label("Project", exact=True).select_option("team-a")
    page.get_by_label("GPU-hours", exact=True).fill("6")
    page.get_by_label("Window", exact=True).select_option("term")
    page.get_by_label("Term start").fill((now - timedelta(days=30)).date().isoformat())
    page.get_by_label("Kind", exact=True).select_option("hard")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#err_term_end")).to_have_text("a term needs both dates")
    page.screenshot(path=artifacts / "budget-form-error.png", full_page=True)
    page.get_by_label("Term end (included)").fill((now + timedelta(days=60)).date().isoformat())
    page.get_by_role("button", name="Save").click()
    expect(page.locator("tr[data-budget='autumn']")).to_be_visible()
    assert Budget.objects.get().kind == "hard"
    page.context.clear_cookies()

    sign_in(page, server, member.username)
    page.goto(server.url + "/projects/team-a/")
    row = page.locator("#budgets tr[data-budget='autumn']")
    expect(row.locator(".used")).to_have_text("8.00 of 6.00 GPU-h")
    expect(row.locator(".left")).to_have_text("0.00 GPU-h")
    expect(row.locator(".runs-out")).to_have_text("spent")
    expect(row).to_contain_text("hard (jobs wait)")
    page.locator("#budgets").screenshot(path=artifacts / "budget-project-page.png")
    page.goto(server.url + "/me/")
    expect(page.locator("#budgets tr[data-budget='autumn'] .percent")).to_have_text("133 %")
    page.goto(server.url + "/budgets/new/")
    expect(page.locator("body")).not_to_contain_text("Term start")  # members may not add one
