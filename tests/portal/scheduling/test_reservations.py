"""Reservations through the portal's cycle (issue 37, R22 in docs/reservations.md): the cycle
hands the bookings in view to the core, so a job that might overrun a slot waits naming it, and
at the slot's start the project's waiting job takes the GPUs back, the booking as the reason."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core import mail

from portal.jobs.models import JobEvent, Status
from portal.notify import dispatch
from portal.reservations.models import Reservation
from portal.reservations.services import HORIZON
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db(transaction=True)


def book(project, clock, ahead_s: float, gpus: int = 8) -> Reservation:
    start = clock.now + timedelta(seconds=ahead_s)
    return Reservation.objects.create(name="deadline", project=project, gpus=gpus, start=start,
                                      end=start + timedelta(hours=1))  # fmt: skip


def test_r22_2_a_job_that_might_overrun_a_booked_slot_waits_naming_it(cluster, clock):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    team_b = cluster.project("team-b", 0, over_quota_weight=Decimal(1))
    booking = book(team_b, clock, 3600)
    cluster.submit("team-a", "long", 8)
    cluster.cycle()
    job = cluster.job("team-a", "long")
    assert job.status == Status.PENDING
    assert "team-b's reservation 'deadline' needs at" in job.pending_reason
    assert job.pending_reason.endswith("its run time is unknown (R22.2)")
    booking.start += HORIZON  # out of view: nothing held back any more
    booking.end += HORIZON
    booking.save()
    cluster.settle()
    assert cluster.job("team-a", "long").status == Status.RUNNING


def test_r22_3_at_the_slot_start_the_project_takes_its_gpus_back_within_one_cycle(cluster, clock):
    cluster.node("n1", 8)
    cluster.project("team-a", 8)
    team_b = cluster.project("team-b", 0, over_quota_weight=Decimal(1))
    cluster.submit("team-a", "early", 8)
    cluster.settle()
    assert cluster.job("team-a", "early").status == Status.RUNNING
    book(team_b, clock, 600)  # booked after team-a's job started
    cluster.submit("team-b", "train", 8)
    cluster.settle()  # before the slot: team-b's quota of 0 gives it nothing
    assert cluster.job("team-b", "train").status == Status.PENDING
    clock.advance(600)
    cluster.cycle()
    evicted = JobEvent.objects.filter(job_name="early", kind="evicted").last()
    assert evicted is not None
    assert "team-b's reservation 'deadline' holds from" in evicted.message
    assert evicted.message.endswith("(R22.3)")
    cluster.settle()
    assert cluster.job("team-b", "train").status == Status.RUNNING
    assert cluster.job("team-a", "early").status == Status.PENDING  # R22.4: out of R9's reach


def test_the_project_s_members_are_told_once_an_hour_before_each_slot(
    cluster, clock, settings, owner, member
):
    settings.ALLOT_NOTIFICATIONS = True
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    for person, address in ((owner, "alice@example.org"), (member, "bob@example.org")):
        person.email = address
        person.save()
    cluster.node("n1", 8)
    team_a = Project.objects.get(name="team-a")
    booking = book(team_a, clock, 2 * 3600)
    booking.weekly = True
    booking.save()
    cluster.cycle()
    assert not JobEvent.objects.filter(kind="reservation").exists()  # two hours ahead
    clock.advance(3600 + 60)
    cluster.cycle()
    cluster.cycle()  # once per occurrence
    dispatch.wait_idle()
    (event,) = JobEvent.objects.filter(kind="reservation")
    assert event.message.startswith("team-a's reservation 'deadline' of 8 GPUs starts at ")
    assert event.message.endswith("take back what holds the GPUs (R22.3)")
    assert sorted(m.to[0] for m in mail.outbox) == ["alice@example.org", "bob@example.org"]
    assert mail.outbox[0].subject == "[Allot] team-a reservation about to start"
    clock.advance(7 * 24 * 3600)  # the next week's slot is announced again
    cluster.cycle()
    assert JobEvent.objects.filter(kind="reservation").count() == 2
