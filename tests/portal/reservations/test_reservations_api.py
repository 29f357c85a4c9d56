"""Reservations over REST (issue 37, R22.1): cluster admins book anything, a project's admins
book for it within the policy of `portal.access.booking_refusal`, members read their projects'
bookings; a booking over capacity is refused naming the field and the booking it collides with,
and nothing is written; the schema documents the endpoints."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from portal.audit.models import AuditEntry
from portal.reservations.models import Reservation

pytestmark = pytest.mark.django_db
URL = "/api/v1/reservations/"


@pytest.fixture
def admin_api(api, cluster_admin, nodes, team_a):
    return api(cluster_admin)


def slot(project="team-a", gpus=8, hours_ahead=24, length=3, name="deadline", **more) -> dict:
    start = timezone.now().replace(microsecond=0) + timedelta(hours=hours_ahead)
    return {"name": name, "project": project, "gpus": gpus, "start": start.isoformat(),
            "end": (start + timedelta(hours=length)).isoformat(), **more}  # fmt: skip


def test_r22_1_an_admin_books_and_the_project_s_members_read_it_but_no_one_else(
    admin_api, api, member, outsider
):
    response = admin_api.post(URL, slot(cpu="16", memory="64Gi"), format="json")
    assert response.status_code == 201, response.content
    got = response.json()
    assert (got["gpus"], got["cpu"], got["memory"], got["memory_mib"]) == (8, "16", "64Gi", 65536)
    assert got["created_by"] == "root" and len(got["next_occurrences"]) == 1
    assert AuditEntry.objects.filter(action="reservation.created").exists()
    assert [r["name"] for r in api(member).get(URL).json()["results"]] == ["deadline"]
    assert api(outsider).get(URL).json()["results"] == []
    assert api(outsider).get(f"{URL}{got['id']}/").status_code == 404
    response = api(outsider).post(URL, slot(name="mine"), format="json")
    assert response.status_code == 404 and "project" in response.json()  # as a missing one
    assert api(member).delete(f"{URL}{got['id']}/").status_code == 403
    assert admin_api.delete(f"{URL}{got['id']}/").status_code == 204
    assert not Reservation.objects.exists()


def test_r22_1_overlapping_bookings_over_capacity_are_refused_naming_gpus(admin_api, team_b):
    assert admin_api.post(URL, slot(gpus=10), format="json").status_code == 201
    response = admin_api.post(URL, slot("team-b", gpus=8, hours_ahead=25, name="b"),
                              format="json")  # fmt: skip
    assert response.status_code == 400
    (reason,) = response.json()["gpus"]
    assert "the cluster would have 18 of its 16 GPUs booked, with 'deadline' (R22.1)" in reason
    assert Reservation.objects.count() == 1
    fits = slot("team-b", gpus=6, hours_ahead=25, name="b")
    assert admin_api.post(URL, fits, format="json").status_code == 201
    after = slot("team-b", gpus=12, hours_ahead=27, name="c")  # 'deadline' has ended then
    response = admin_api.post(URL, after, format="json")
    assert response.status_code == 400 and "18 of its 16 GPUs booked, with 'b'" in str(
        response.json()["gpus"]
    )  # 'b' still runs
    after = slot("team-b", gpus=12, hours_ahead=28, length=1, name="c")
    assert admin_api.post(URL, after, format="json").status_code == 201


def test_r22_1_a_weekly_booking_is_refused_by_any_of_its_weeks(admin_api):
    start = timezone.now().replace(microsecond=0) + timedelta(days=15)
    one = {"name": "once", "project": "team-a", "gpus": 10, "start": start.isoformat(),
           "end": (start + timedelta(hours=3)).isoformat()}  # fmt: skip
    assert admin_api.post(URL, one, format="json").status_code == 201
    weekly = {"name": "course", "project": "team-a", "gpus": 8, "weekly": True,
              "start": (start - timedelta(weeks=2)).isoformat(),
              "end": (start - timedelta(weeks=2) + timedelta(hours=1)).isoformat()}  # fmt: skip
    response = admin_api.post(URL, weekly, format="json")
    assert response.status_code == 400 and "with 'once'" in response.json()["gpus"][0]
    weekly["repeat_until"] = (start - timedelta(days=1)).isoformat()  # stops before it
    response = admin_api.post(URL, weekly, format="json")
    assert response.status_code == 201, response.content
    assert len(response.json()["next_occurrences"]) == 2


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"gpus": 0}, "gpus", "greater than or equal to 1"),
        ({"gpus": 17}, "gpus", "the cluster has 16 GPUs, fewer than 17 (R22.1)"),
        ({"pool": "h100"}, "pool", "no node is in pool 'h100' (R22.1)"),
        ({"whole_nodes": True}, "pool", "whole nodes are booked in one pool"),
        ({"pool": "default", "whole_nodes": True, "gpus": 12}, "gpus", "not whole nodes of 8"),
        ({"repeat_until": "2099-01-01T00:00:00Z"}, "repeat_until", "only a weekly booking"),
        ({"end": "2000-01-01T00:00:00Z"}, "end", "must be after start"),
        ({"cpu": "lots"}, "cpu", ""),
    ],
)
def test_r22_1_a_bad_booking_is_a_400_naming_the_field(admin_api, change, field, text):
    response = admin_api.post(URL, {**slot(), **change}, format="json")
    assert response.status_code == 400, response.content
    assert text in " ".join(response.json()[field])
    assert not Reservation.objects.exists()


def test_r22_1_a_project_admin_books_for_it_within_its_quota_one_day_at_a_time(
    api, owner, member, nodes
):
    mine = api(owner)
    assert mine.post(URL, slot(gpus=4, length=24), format="json").status_code == 201
    for body, field in [(slot(gpus=5, name="x"), "gpus"),
                        (slot(gpus=2, length=25, name="x"), "end"),
                        (slot(gpus=2, hours_ahead=24 * 15, name="x"), "start"),
                        (slot(gpus=2, weekly=True, name="x"), "weekly")]:  # fmt: skip
        response = mine.post(URL, body, format="json")
        assert response.status_code == 400 and field in response.json(), response.content
    response = api(member).post(URL, slot(gpus=1, name="x"), format="json")
    assert response.status_code == 403
    assert "only cluster admins and admins of team-a may book" in response.json()["detail"]
    (booking,) = Reservation.objects.all()
    assert mine.patch(f"{URL}{booking.id}/", {"gpus": 9}, format="json").status_code == 400
    assert mine.patch(f"{URL}{booking.id}/", {"gpus": 3}, format="json").status_code == 200


def test_r22_1_a_refusal_does_not_name_another_project_s_booking(admin_api, api, owner, team_b):
    assert admin_api.post(URL, slot("team-b", gpus=14, name="b-secret"),
                          format="json").status_code == 201  # fmt: skip
    response = api(owner).post(URL, slot(gpus=4), format="json")
    assert response.status_code == 400
    (reason,) = response.json()["gpus"]
    assert "another project's booking" in reason and "b-secret" not in reason


def test_the_schema_documents_the_reservation_endpoints(api, member):
    schema = api(member).get("/api/schema/?format=json").json()
    assert {"/api/v1/reservations/", "/api/v1/reservations/{id}/"} <= set(schema["paths"])
    fields = schema["components"]["schemas"]["Reservation"]["properties"]
    assert {"gpus", "pool", "whole_nodes", "weekly", "next_occurrences"} <= set(fields)


def test_weekly_occurrences_keep_the_portal_s_wall_clock(admin_api, settings):
    settings.TIME_ZONE = "Europe/Paris"
    timezone.activate("Europe/Paris")
    try:
        start = datetime(2099, 10, 20, 12, 0, tzinfo=UTC)  # 14:00 in Paris, summer time
        body = {
            "name": "lab",
            "project": "team-a",
            "gpus": 8,
            "weekly": True,
            "start": start.isoformat(),
            "end": (start + timedelta(hours=3)).isoformat(),
        }
        assert admin_api.post(URL, body, format="json").status_code == 201
        from portal.reservations.services import occurrences

        slots = occurrences(Reservation.objects.get(), start, start + timedelta(days=8))
        assert [s.astimezone(UTC).hour for s, _ in slots] == [12, 13]  # 14:00 both weeks
    finally:
        timezone.deactivate()
