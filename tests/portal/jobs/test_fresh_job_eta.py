"""Issue 34 item 3: a job just submitted is told it starts at the next cycle if there is room -
not "not known yet: it waits behind more than 30 days of predicted run time", which every
submission's REST answer carried while its first cycle was starting it."""

from __future__ import annotations

import pytest

from portal.jobs.models import Job

pytestmark = pytest.mark.django_db


def test_a_fresh_submission_expects_the_next_cycle(api, member, nodes):
    answer = api(member).post("/api/v1/jobs/", {"project": "team-a", "name": "t1", "gpus": 1},
                              format="json")  # fmt: skip
    assert answer.status_code == 201
    text = answer.json()["expected_start"]
    assert "30 days" not in text and text.startswith("at the next scheduling cycle")


def test_once_a_cycle_left_it_waiting_the_reason_and_the_horizon_text_stand(api, member, nodes):
    api(member).post("/api/v1/jobs/", {"project": "team-a", "name": "t1", "gpus": 1},
                     format="json")  # fmt: skip
    Job.objects.filter(name="t1").update(pending_reason="over quota: ... (R3.1)")
    text = api(member).get("/api/v1/jobs/team-a/t1/").json()["expected_start"]
    assert text.startswith("not known yet: it waits behind more than 30 days")
