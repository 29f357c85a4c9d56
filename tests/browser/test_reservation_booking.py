"""The booking form of the reservations page in Chromium (issue 37): a cluster admin books a
slot of next week and finds it on that week's calendar; a second booking of the same hours over
the cluster's GPUs is refused with the reason beside the GPUs box, nothing saved; Preview of a
booking starting now shows the running job it would take the GPUs back from for the project's
waiting job, the table of
expected starts and the chart, and saves nothing."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from portal.cluster.models import Node
from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from portal.reservations.models import Reservation
from tests.browser.conftest import sign_in, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def fill_booking(page, name: str, project: str, gpus: int, start: datetime, hours: int) -> None:
    form = page.locator("#booking")
    form.get_by_label("Name").fill(name)
    form.get_by_label("Project").select_option(project)
    form.get_by_label("GPUs", exact=True).fill(str(gpus))
    form.get_by_label("Start").fill(f"{start:%Y-%m-%dT%H:%M}")
    form.get_by_label("End", exact=True).fill(f"{start + timedelta(hours=hours):%Y-%m-%dT%H:%M}")


def test_book_see_the_week_a_refused_conflict_and_a_preview(
    page, server, artifacts, cluster_admin, member, team_a, team_b, outsider
):
    Node.objects.create(name="dgx1-1", gpus=8, gpu_memory_bytes=32 * 2**30, pool="default")
    zone = timezone.get_current_timezone()
    today = timezone.localdate()
    monday = today - timedelta(days=today.weekday())
    tuesday = datetime.combine(monday + timedelta(days=8), datetime.min.time(), tzinfo=zone)
    start = tuesday + timedelta(hours=14)  # next week's Tuesday, 14:00 to 17:00

    sign_in(page, server, "root")
    page.goto(server.url + "/reservations/")
    fill_booking(page, "course-lab", "team-a", 4, start, 3)
    page.locator("#booking").get_by_role("button", name="Book").click()
    expect(page.locator(".messages")).to_contain_text("Reservation course-lab of 4 GPUs saved.")
    following = monday + timedelta(days=7)
    expect(page.locator("#week")).to_have_text(f"Week of Mon {following.day} {following:%b %Y}")
    expect(page.locator("#calendar td[data-booked='4']")).to_have_count(3)
    expect(page.locator("#calendar td[data-booked='4']").first).to_contain_text(
        "course-lab (team-a, 4)"
    )
    expect(page.locator("#slots tr[data-reservation='course-lab']")).to_be_visible()
    page.screenshot(path=artifacts / "reservation-booked.png", full_page=True)

    fill_booking(page, "clash", "team-b", 6, start + timedelta(hours=1), 1)
    page.locator("#booking").get_by_role("button", name="Book").click()
    error = page.locator("#err_gpus")
    expect(error).to_contain_text("the cluster would have 10 of its 8 GPUs booked")
    expect(error).to_contain_text("'course-lab'")
    expect(page.locator("#booking").get_by_label("Name")).to_have_value("clash")
    page.locator("#booking").screenshot(path=artifacts / "reservation-refused.png")
    assert list(Reservation.objects.values_list("name", flat=True)) == ["course-lab"]

    submit_job(member, team_a, name="a-run", gpus=8)
    wait_for(lambda: Job.objects.get(name="a-run").status == Status.RUNNING, 60)  # its cycle
    submit_job(outsider, team_b, name="b-wait", gpus=4)  # waits: a-run holds the node
    page.goto(server.url + "/reservations/")
    now = timezone.localtime().replace(second=0, microsecond=0)
    fill_booking(page, "b-now", "team-b", 8, now, 2)  # team-b takes the node from now on
    page.locator("#booking").get_by_role("button", name="Preview").click()
    box = page.locator("#whatif")
    expect(box.locator("#whatif-preempted")).to_contain_text("team-a/a-run")
    expect(box.locator("#whatif-table tr[data-project='team-a'] td").nth(1)).to_have_text("1")
    team_b_row = box.locator("#whatif-table tr[data-project='team-b'] td")
    expect(team_b_row.nth(3)).to_have_text("now")  # b-wait's first start with the booking
    expect(box.locator("#whatif-chart .main-svg").first).to_be_visible()
    page.screenshot(path=artifacts / "reservation-preview.png", full_page=True)

    fill_booking(page, "b-now", "team-b", 8, now + timedelta(hours=2), 0)  # ends at its start
    page.locator("#booking").get_by_role("button", name="Preview").click()
    expect(page.locator("#err_end")).to_have_text("must be after the start")
    expect(box).to_be_hidden()
    assert not Reservation.objects.filter(name="b-now").exists()
    assert Job.objects.get(name="a-run").status == Status.RUNNING
