"""Issue 37's reservation scenarios through the REST API: each r22_* file of
tests/scheduler/scenarios/ replayed on one live portal with the replay clock on
(`ALLOT_REPLAY_CLOCK`) by scripts/replay_scenario.py (`--reset` between them). The script books
through the reservations resource (accepted, or refused naming the field and the booking it
collides with), sets the portal's clock to each step's time (the slot's start among them) and
prints what the core prints: the job held back before a slot, the one that ends before it
started, the work on reserved GPUs reclaimed in the first cycle at the slot's start, lent GPUs
taken back when the project submits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portal.jobs.models import JobEvent
from portal.reservations.models import Reservation
from portal.tenancy.services import issue_token
from tests.portal.api.test_replay_resource_scenarios import SCENARIOS, differences_through_rest

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def replay_clock(settings):
    settings.ALLOT_REPLAY_CLOCK = True


def reservation_scenarios() -> list[Path]:
    return sorted(SCENARIOS.glob("r22_*.json"))


def test_the_reservation_scenarios_are_the_four_of_issue_37():
    names = [p.stem for p in reservation_scenarios()]
    assert len(names) == 4, names


def test_r22_every_reservation_scenario_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, capsys, replay_clock
):
    token = issue_token(cluster_admin, "replay")[1]
    failed = differences_through_rest(reservation_scenarios(), live_server.url, token, capsys)
    assert not failed, json.dumps(failed, indent=1)
    # the last file (r22_5) booked its slot through REST; the borrower's eviction names it
    (booking,) = Reservation.objects.all()
    assert (booking.name, booking.project.name, booking.gpus) == ("lab", "team-b", 8)
    evicted = JobEvent.objects.filter(job_name="borrower", kind="evicted").last()
    assert "team-b's reservation 'lab'" in evicted.message
