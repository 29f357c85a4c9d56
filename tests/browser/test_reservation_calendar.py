"""The reservations calendar in Chromium (issue 37): a member opens the week of their team's
booking from the menu and the week links, sees its hours shaded with the GPUs booked of the
cluster's, the booking named and another team's only counted."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from portal.reservations.models import Reservation
from portal.tenancy.models import Project
from tests.browser.conftest import sign_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_a_member_finds_the_team_s_booking_in_the_week_view(
    page, server, artifacts, nodes, member, team_b
):
    zone = timezone.get_current_timezone()
    monday = timezone.localdate() - timedelta(days=timezone.localdate().weekday())
    start = datetime.combine(monday + timedelta(days=8), datetime.min.time(), tzinfo=zone)
    start += timedelta(hours=14)  # Tuesday of next week, 14:00
    team_a = Project.objects.get(name="team-a")
    Reservation.objects.create(name="course-lab", project=team_a, gpus=8, start=start,
                               end=start + timedelta(hours=3), weekly=True)  # fmt: skip
    Reservation.objects.create(name="b-secret", project=team_b, gpus=4, start=start,
                               end=start + timedelta(hours=1))  # fmt: skip
    sign_in(page, server, member.username)
    page.get_by_role("link", name="Reservations").click()
    expect(page.locator("#no-slots")).to_be_visible()  # this week: nothing of team-a's
    page.get_by_role("link", name="Next week").click()
    following = monday + timedelta(days=7)
    expect(page.locator("#week")).to_have_text(f"Week of Mon {following.day} {following:%b %Y}")
    busy = page.locator("#calendar td[data-booked='12']")
    expect(busy).to_have_count(1)
    expect(busy).to_contain_text("12/16 GPUs")
    expect(busy).to_contain_text("course-lab (team-a, 8)")
    expect(busy).to_contain_text("other teams: 4")
    expect(page.locator("#calendar td[data-booked='8']")).to_have_count(2)
    expect(page.locator("body")).not_to_contain_text("b-secret")
    expect(page.locator("#slots tr[data-reservation='course-lab']")).to_contain_text("(weekly)")
    page.screenshot(path=artifacts / "reservations-week.png", full_page=True)
    page.get_by_role("link", name="Next week").click()  # the weekly slot again, alone
    expect(page.locator("#calendar td[data-booked='8']")).to_have_count(3)
