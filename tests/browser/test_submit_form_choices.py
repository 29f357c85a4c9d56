"""The submit form no longer fights itself (issue 34 item 5), in Chromium: it asks for GPUs or
for GPU memory (choosing one hides the other, so 20Gi of GPU memory is not refused for the GPUs
the form had pre-filled), errors name the form's own labels, the CPU and memory hints are the
chosen project's defaults and follow a change of project, and the user's own project (that of
their last job) is preselected."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from portal.jobs.models import Job
from portal.tenancy.models import Membership, Project
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def vision(member):
    """Project vision (4 cores, 32 GiB per pod by default), where bob last submitted."""
    project = Project.objects.create(
        name="vision", quota=4, default_cpu_millis=4000, default_memory_bytes=32 * 2**30
    )
    Membership.objects.create(user=member, project=project, role="researcher")
    Job.objects.create(project=project, user=member, name="earlier", gpus=1)
    return project


def test_the_form_asks_for_gpus_or_gpu_memory_in_its_own_words(
    page, server, member, vision, nodes, artifacts
):
    sign_in(page, server, "bob")
    page.goto(server.url + "/jobs/new/")
    expect(page.get_by_label("Project")).to_have_value("vision")  # his last job's, not team-a
    expect(page.get_by_label("CPU per pod", exact=True)).to_have_attribute("placeholder", "4")
    expect(page.locator("#help_cpu")).to_contain_text("vision's default, 4.")
    expect(page.locator("#help_memory")).to_contain_text("vision's default, 32Gi.")
    page.screenshot(path=artifacts / "submit-form-vision-defaults.png", full_page=True)

    page.get_by_label("Project").select_option("team-a")  # no defaults: nothing is asked
    expect(page.get_by_label("CPU per pod", exact=True)).to_have_attribute("placeholder", "")
    expect(page.locator("#help_cpu")).to_contain_text("Empty: none asked.")
    page.get_by_label("Project").select_option("vision")

    page.get_by_label("Name").fill("by-memory")
    expect(page.get_by_label("GPU memory per pod")).to_be_hidden()
    page.get_by_label("GPU memory (a share of one GPU)").check()
    expect(page.get_by_label("GPUs per pod")).to_be_hidden()
    page.get_by_label("GPU memory per pod").fill("20Gi")
    page.get_by_label("CPU per pod", exact=True).fill("4")
    page.get_by_label("CPU limit per pod").fill("2")
    page.get_by_role("button", name="Submit").click()
    error = page.locator("#err_cpu_limit")
    expect(error).to_have_text("must be at least the CPU per pod")  # not "the cpu request"
    expect(page.get_by_label("GPU memory per pod")).to_have_value("20Gi")  # the choice is kept
    expect(page.get_by_label("GPUs per pod")).to_be_hidden()
    page.screenshot(path=artifacts / "submit-form-labelled-error.png", full_page=True)

    page.get_by_label("CPU limit per pod").fill("")
    page.get_by_role("button", name="Submit").click()
    page.wait_for_url(server.url + "/jobs/vision/by-memory/")
    job = Job.objects.get(project=vision, name="by-memory")
    assert (job.gpu_memory_bytes, job.cpu_millis, job.memory_bytes) == (
        20 * 2**30, 4000, 32 * 2**30)  # fmt: skip
    page.screenshot(path=artifacts / "submit-form-by-memory-submitted.png", full_page=True)
