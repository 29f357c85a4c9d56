"""The embedded default: the cycle runs in a thread of the web process, woken by each commit."""

from __future__ import annotations

import time

import pytest

from portal.core.trigger import request_cycle
from portal.jobs.models import HOLDING, Status
from portal.scheduling.embedded import start_embedded_cycle, stop_embedded_cycle

pytestmark = pytest.mark.django_db(transaction=True)


def wait_for(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def embedded(settings):
    settings.REDIS_URL = None
    settings.ALLOT_EMBEDDED_CYCLE = True
    settings.ALLOT_CYCLE_INTERVAL_S = 60  # only a wake-up can run a cycle within the test
    assert start_embedded_cycle()
    yield
    stop_embedded_cycle()


def test_a_committed_submission_wakes_the_in_process_cycle(embedded, cluster, api, cluster_admin):
    cluster.node("n1", 8)
    cluster.project("team-a", 4)
    body = {"project": "team-a", "name": "nb", "gpus": 1, "type": "interactive"}
    assert api(cluster_admin).post("/api/v1/jobs/", body, format="json").status_code == 201
    assert wait_for(lambda: cluster.job("team-a", "nb").status in HOLDING)
    request_cycle()  # any later change: the next cycle observes the container running
    assert wait_for(lambda: cluster.job("team-a", "nb").status == Status.RUNNING)


def test_it_starts_once_and_not_at_all_with_redis_or_when_switched_off(settings):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert start_embedded_cycle() is False
    settings.REDIS_URL = None
    settings.ALLOT_EMBEDDED_CYCLE = False
    assert start_embedded_cycle() is False
