"""`update_by_id`: many rows, each with values of its own, in one statement (issue 39).

The ETA refresh wrote every job's six ETA fields with Django's `bulk_update` (a CASE per row and
field); the cycle's commit had its own array UPDATE. Both now use `update_by_id`, checked here on
PostgreSQL against what `bulk_update` writes (on SQLite it is `bulk_update`)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from portal.core.bulk import update_by_id
from portal.jobs.models import Job, Status
from portal.tenancy.models import Project

pytestmark = pytest.mark.django_db


@pytest.fixture
def jobs() -> list[Job]:
    project = Project.objects.create(name="bulk", quota=4)
    return [Job.objects.create(project=project, name=f"j{i}", gpus=1) for i in range(5)]


def test_each_row_gets_its_own_values_in_one_statement(jobs):
    at = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
    ids = [job.id for job in jobs]
    values = {
        "expected_s": [60 * i for i in range(5)],
        "eta": [at, None, at, None, at],
        "eta_note": ["", "can't", 'it\'s "quoted"', "ünïcode", "x" * 200],
        "expected_end": [None, 1.5, float("inf"), 0.0, -2.25],
        "command": [["python", "train.py"], [], ["a b"], ["{}"], ['"']],
    }
    with CaptureQueriesContext(connection) as done:
        assert update_by_id(Job, ids, values) == 5
    assert len(done.captured_queries) == 1
    for i, job in enumerate(Job.objects.filter(id__in=ids).order_by("name")):
        assert [job.expected_s, job.eta, job.eta_note, job.expected_end, job.command] == [
            values[name][i] for name in values
        ]


def test_the_same_rows_as_bulk_update_and_only_those_matching_where(jobs):
    Job.objects.filter(id=jobs[1].id).update(status=Status.RUNNING)
    ids = [job.id for job in jobs] + [10**9]  # one that does not exist
    notes = [f"note {i}" for i in range(6)]
    matched = update_by_id(Job, ids, {"eta_note": notes}, where={"status": Status.PENDING})
    assert matched == 4
    assert dict(Job.objects.values_list("name", "eta_note")) == {
        "j0": "note 0", "j1": "", "j2": "note 2", "j3": "note 3", "j4": "note 4"
    }  # fmt: skip
    rows = [Job(id=job.id, eta_note=notes[i]) for i, job in enumerate(jobs)]
    assert Job.objects.filter(status=Status.PENDING).bulk_update(rows, ["eta_note"]) == matched


def test_batches_add_up_and_nothing_is_a_no_op(jobs):
    ids = [job.id for job in jobs]
    with CaptureQueriesContext(connection) as done:
        assert update_by_id(Job, ids, {"expected_s": [7] * 5}, batch_size=2) == 5
        assert update_by_id(Job, [], {"expected_s": []}) == 0
    assert len(done.captured_queries) == 3
    assert set(Job.objects.values_list("expected_s", flat=True)) == {7}


def test_a_relation_is_refused_by_name(jobs):
    with pytest.raises(ValueError, match=r"Job\.project"):
        update_by_id(Job, [jobs[0].id], {"project": [jobs[0].project_id]})
