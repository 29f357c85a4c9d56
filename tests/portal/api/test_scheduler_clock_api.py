"""`/api/v1/scheduler/clock/` (issues 36 and 37): the replay clock of a scratch portal. Off (every
real portal) it is a 404; on, cluster admins only (403 else) read it and set it forward, by a time
or by seconds; bad input and a move backwards are 400s naming the field; the cycle, budgets and
runs then read that time. The portal refuses to start with it on and DEBUG off (a system check)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from portal.core import clock
from portal.jobs.models import Job, JobRun
from portal.jobs.services import delete_job, submit_job
from portal.scheduling.settle import settle

pytestmark = pytest.mark.django_db
URL = "/api/v1/scheduler/clock/"
T0 = datetime(2031, 3, 4, 0, 0, tzinfo=UTC)


@pytest.fixture
def replay_clock(settings):
    settings.ALLOT_REPLAY_CLOCK = True


def test_off_the_resource_does_not_exist_and_the_portal_reads_the_wall_clock(api, cluster_admin):
    assert api(cluster_admin).get(URL).status_code == 404
    assert api(cluster_admin).post(URL, {"now": T0.isoformat()}, format="json").status_code == 404
    assert api(cluster_admin).put(URL, {}, format="json").status_code == 405  # never a method
    assert abs((clock.now() - datetime.now(UTC)).total_seconds()) < 60


def test_a_cluster_admin_sets_it_forward_and_it_stands_still(api, cluster_admin, replay_clock):
    client = api(cluster_admin)
    unset = client.get(URL).json()
    assert unset["set"] is False  # the wall clock until set
    answer = client.post(URL, {"now": T0.isoformat()}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json() == {"now": "2031-03-04T00:00:00Z", "set": True}
    answer = client.post(URL, {"advance_seconds": 5400.5}, format="json")
    assert answer.json()["now"] == "2031-03-04T01:30:00.500000Z"
    assert clock.now() == T0 + timedelta(seconds=5400.5) == clock.now()  # stands still


def test_bad_input_and_a_move_backwards_are_400s_naming_the_field(api, cluster_admin, replay_clock):
    client = api(cluster_admin)
    client.post(URL, {"now": T0.isoformat()}, format="json")
    cases = [
        ({"now": (T0 - timedelta(seconds=1)).isoformat()}, "now", "never moves backwards"),
        ({"advance_seconds": -1}, "advance_seconds", "never moves backwards"),
        ({"advance_seconds": "ten"}, "advance_seconds", ""),
        ({"now": "yesterday"}, "now", ""),
        ({}, "now", "give either now or advance_seconds"),
        ({"now": T0.isoformat(), "advance_seconds": 1}, "now", "either"),
    ]
    for body, field, words in cases:
        answer = client.post(URL, body, format="json")
        assert answer.status_code == 400, (body, answer.content)
        assert words in " ".join(answer.json()[field]), (body, answer.json())
    assert clock.now() == T0  # nothing half-written


def test_only_cluster_admins_read_or_set_it(api, member, replay_clock):
    assert api(member).get(URL).status_code == 403
    assert api(member).post(URL, {"advance_seconds": 60}, format="json").status_code == 403
    assert api().get(URL).status_code in (401, 403)


@pytest.mark.django_db(transaction=True)
def test_runs_are_counted_on_the_replay_clock(api, cluster_admin, team_a, nodes, replay_clock):
    """A job started at the set time and deleted an hour of the clock later ran exactly an hour,
    however long the test took on the wall clock."""
    client = api(cluster_admin)
    client.post(URL, {"now": T0.isoformat()}, format="json")
    submit_job(None, team_a, name="j", gpus=2)
    assert settle()[1]
    client.post(URL, {"advance_seconds": 3600}, format="json")
    delete_job(Job.objects.get(name="j"))
    (run,) = JobRun.objects.all()
    assert (run.started_at, run.ended_at) == (T0, T0 + timedelta(hours=1))


def test_the_portal_refuses_to_start_with_it_on_and_debug_off(settings):
    settings.ALLOT_REPLAY_CLOCK, settings.DEBUG = True, False
    with pytest.raises(SystemCheckError, match=r"allot\.E101"):
        call_command("check")
    settings.DEBUG = True
    call_command("check")
