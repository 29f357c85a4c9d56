"""Reservations through the portal's cycle (issue 37, R22 in docs/reservations.md): the cycle
hands the bookings in view to the core, so a job that might overrun a slot waits naming it, and
at the slot's start the project's waiting job takes the GPUs back, the booking as the reason."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from portal.jobs.models import JobEvent, Status
from portal.reservations.models import Reservation
from portal.reservations.services import HORIZON

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
