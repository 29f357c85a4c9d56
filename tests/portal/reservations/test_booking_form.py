"""The booking form on the reservations page (issue 37): a cluster admin books and lands on the
slot's week; a project's admin books within the policy and is refused past it; a member sees no
form and may not post one; each refusal is printed beside its box in the form's words, with
status 400 and nothing saved. The Preview answers the what-if of the booking as entered, or
the same refusals by field, and saves nothing."""

from datetime import datetime, timedelta

import pytest
from django.test import Client
from django.utils import timezone

from portal.jobs.models import Job, Status
from portal.jobs.services import submit_job
from portal.reservations.models import Reservation

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def local(moment: datetime) -> str:
    """A time as the form's datetime-local box posts it."""
    return timezone.localtime(moment).strftime("%Y-%m-%dT%H:%M")


def slot(days: int = 2, hours: int = 3) -> tuple[datetime, datetime]:
    start = timezone.now().replace(minute=0, second=0, microsecond=0) + timedelta(days=days)
    return start, start + timedelta(hours=hours)


def form(project="team-a", gpus="8", days=2, hours=3, **extra) -> dict:
    start, end = slot(days, hours)
    return {"name": "deadline", "project": project, "gpus": gpus, "start": local(start),
            "end": local(end), **extra}  # fmt: skip


def test_a_cluster_admin_books_and_sees_the_slot_s_week(nodes, cluster_admin, team_a):
    client = signed_in(cluster_admin)
    page = client.get("/reservations/").content.decode()
    assert 'id="booking"' in page and 'data-url="/reservations/preview/"' in page
    answer = client.post("/reservations/", form(weekly="on", cpu="32", memory="256Gi"))
    assert answer.status_code == 302
    booking = Reservation.objects.get(name="deadline")
    assert (booking.project, booking.gpus, booking.weekly) == (team_a, 8, True)
    assert booking.cpu_millis == 32_000 and booking.memory_bytes == 256 * 2**30
    monday = timezone.localtime(booking.start).date()
    monday -= timedelta(days=monday.weekday())
    week = client.get(answer["Location"]).content.decode()
    assert f"Week of {monday:%a} {monday.day} {monday:%b %Y}" in week
    assert "Reservation deadline of 8 GPUs saved." in week
    assert 'data-reservation="deadline"' in week


def test_a_conflict_is_refused_beside_the_gpus_box_with_the_reason(nodes, cluster_admin, team_a):
    start, end = slot()
    Reservation.objects.create(name="course", project=team_a, gpus=12, start=start, end=end)
    answer = signed_in(cluster_admin).post("/reservations/", form())
    html = answer.content.decode()
    assert answer.status_code == 400
    assert 'id="err_gpus"' in html
    assert "the cluster would have 20 of its 16 GPUs booked, with &#x27;course&#x27;" in html
    assert 'value="deadline"' in html  # the form keeps what was typed
    assert not Reservation.objects.filter(name="deadline").exists()


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"hours": 0}, "end", "must be after the start"),
        ({"gpus": "0"}, "gpus", "greater than or equal to 1"),
        ({"name": ""}, "name", "This field is required."),
        ({"whole_nodes": "on"}, "pool", "whole nodes are booked in one pool: name it"),
        ({"repeat_until": "2099-01-01T00:00"}, "repeat_until", "only a weekly booking repeats"),
        ({"pool": "gpu-h100"}, "pool", "no node is in pool &#x27;gpu-h100&#x27;"),
    ],
)
def test_each_bad_field_is_named_beside_its_box(nodes, cluster_admin, team_a, changes, field,
                                                words):  # fmt: skip
    data = form(hours=changes.pop("hours", 3))
    data.update(changes)
    answer = signed_in(cluster_admin).post("/reservations/", data)
    html = answer.content.decode()
    assert answer.status_code == 400
    error = html[html.index(f'id="err_{field}">') + len(f'id="err_{field}">') :]
    message = error[: error.index("</p>")]
    assert words in message
    assert "repeat_until" not in message and "whole_nodes" not in message
    assert not Reservation.objects.exists()


def test_a_project_admin_books_within_the_policy_and_is_refused_past_it(
    nodes, owner, team_a, team_b
):
    client = signed_in(owner)
    page = client.get("/reservations/").content.decode()
    assert '<option value="team-a"' in page and '<option value="team-b"' not in page
    assert "whatif-preview" not in page  # the what-if shows every project: cluster admins'
    over = client.post("/reservations/", form(gpus="8"))
    assert over.status_code == 400
    assert "at most team-a&#x27;s quota of 4 GPUs" in over.content.decode()
    weekly = client.post("/reservations/", form(gpus="4", weekly="on")).content.decode()
    assert "only cluster admins may book a weekly slot" in weekly
    other = client.post("/reservations/", form(project="team-b", gpus="1")).content.decode()
    assert 'id="err_project"' in other
    assert not Reservation.objects.exists()
    assert client.post("/reservations/", form(gpus="4")).status_code == 302
    assert Reservation.objects.get().created_by == owner


def test_a_member_sees_no_form_and_may_not_post_one(nodes, member, team_a):
    client = signed_in(member)
    assert 'id="booking"' not in client.get("/reservations/").content.decode()
    assert client.post("/reservations/", form(gpus="1")).status_code == 403
    assert client.post("/reservations/preview/", form(gpus="1")).status_code == 403
    assert not Reservation.objects.exists()


def test_the_preview_shows_whom_the_booking_delays_and_saves_nothing(
    nodes, cluster_admin, member, outsider, team_a, team_b
):
    """team-b's job of 8 GPUs would start now and run 8 hours (its estimate); a booking of
    the whole cluster for team-a in two hours holds it back until after the slot (R22.2)."""
    submit_job(outsider, team_b, name="b-long", gpus=8, estimate_s=8 * 3600)
    data = form(gpus="16", days=0, hours=3)
    start = timezone.now().replace(second=0, microsecond=0) + timedelta(hours=2)
    data["start"], data["end"] = local(start), local(start + timedelta(hours=3))
    answer = signed_in(cluster_admin).post("/reservations/preview/", data)
    assert answer.status_code == 200, answer.content
    body = answer.json()
    b = next(p for p in body["projects"] if p["project"] == "team-b")
    assert b["pending"] == 1
    assert b["before"]["first"] == body["now"]  # without the booking: now
    assert b["after"]["first"] is None or b["after"]["first"] > b["before"]["first"]
    assert not Reservation.objects.exists()
    assert Job.objects.get(name="b-long").status == Status.PENDING


def test_the_preview_gives_the_refusals_by_field(nodes, cluster_admin, team_a):
    start, end = slot()
    Reservation.objects.create(name="course", project=team_a, gpus=12, start=start, end=end)
    client = signed_in(cluster_admin)
    answer = client.post("/reservations/preview/", form())
    assert answer.status_code == 400
    assert "would have 20 of its 16 GPUs booked" in answer.json()["errors"]["gpus"][0]
    bad = client.post("/reservations/preview/", form(hours=0)).json()
    assert bad == {"errors": {"end": ["must be after the start"]}}
