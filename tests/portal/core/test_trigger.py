"""request_cycle: one Celery task for a burst of changes, a wake-up in the embedded default."""

from __future__ import annotations

import pytest
import redis

from portal.celery import app
from portal.core import trigger
from portal.scheduling import tasks

REDIS_URL = "redis://127.0.0.1:6379/12"  # a database of its own: the test flushes it


@pytest.fixture
def sent(settings, monkeypatch) -> list[dict]:
    settings.REDIS_URL = REDIS_URL
    redis.Redis.from_url(REDIS_URL).flushdb()
    calls: list[dict] = []
    monkeypatch.setattr(app, "send_task", lambda name, **kw: calls.append({"task": name, **kw}))
    return calls


def test_a_burst_of_changes_sends_one_task_until_the_task_begins(sent):
    for _ in range(50):
        trigger.request_cycle()
    assert len(sent) == 1 and sent[0]["expires"] > 0
    assert sent[0]["task"] == tasks.run_cycle.name
    trigger.clear_request()  # what the task does before it reads the database
    trigger.request_cycle()
    assert len(sent) == 2


def test_a_busy_task_asks_for_one_more_cycle_shortly_after(sent, monkeypatch):
    from portal.scheduling.cycle import CycleResult

    monkeypatch.setattr(tasks, "run_one_cycle", lambda wait: CycleResult("busy"))
    assert tasks.run_cycle.run()["status"] == "busy"
    assert sent == [
        {"task": tasks.run_cycle.name, "countdown": tasks.BUSY_RETRY_S,
         "expires": trigger.TASK_EXPIRES_S}
    ]  # fmt: skip


def test_without_redis_it_wakes_the_embedded_timer_and_never_raises(settings):
    settings.REDIS_URL = None
    trigger.cycle_wanted.clear()
    trigger.request_cycle()
    assert trigger.cycle_wanted.is_set()  # the event the embedded timer thread waits on
    trigger.cycle_wanted.clear()


def test_a_broker_that_is_down_does_not_fail_the_request(settings, caplog):
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    trigger.request_cycle()
    assert "could not request a scheduling cycle" in caplog.text
