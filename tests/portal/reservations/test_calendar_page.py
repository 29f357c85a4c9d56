"""The reservations calendar (issue 37): a week hour by hour, each booked hour with the GPUs
booked of the cluster's; a member sees their project's bookings named and other teams' only
counted; a bad week in the link shows this week rather than failing."""

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.reservations.models import Reservation

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_a_member_sees_the_week_s_load_and_only_their_project_s_bookings_named(
    nodes, member, team_a, team_b
):
    zone = timezone.get_current_timezone()
    start = datetime(2099, 3, 3, 14, 0, tzinfo=zone)  # a Tuesday
    Reservation.objects.create(name="deadline", project=team_a, gpus=8, start=start,
                               end=start + timedelta(hours=3))  # fmt: skip
    Reservation.objects.create(name="b-secret", project=team_b, gpus=4, start=start,
                               end=start + timedelta(hours=1), weekly=True)  # fmt: skip
    page = signed_in(member).get("/reservations/?week=2099-03-05")
    html = page.content.decode()
    assert page.status_code == 200
    assert "Week of Mon 2 Mar 2099" in html
    assert html.count('data-booked="12"') == 1 and html.count('data-booked="8"') == 2
    assert "deadline (team-a, 8)" in html and "other teams: 4" in html
    assert "b-secret" not in html and "team-b" not in html
    assert 'data-reservation="deadline"' in html
    later = signed_in(member).get("/reservations/?week=2099-03-10").content.decode()
    assert later.count('data-booked="4"') == 1 and "deadline" not in later  # weekly: b again


def test_a_malformed_week_shows_this_week(nodes, member):
    page = signed_in(member).get("/reservations/?week=not-a-date")
    assert page.status_code == 200
    monday = timezone.localdate() - timedelta(days=timezone.localdate().weekday())
    assert f"Week of {monday:%a} {monday.day} {monday:%b %Y}" in page.content.decode()
