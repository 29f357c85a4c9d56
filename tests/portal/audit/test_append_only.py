"""Audit entries are append-only: no API writes them, the model and its queryset refuse to change
or delete them, and so does the database itself (issue 22). Only retention pruning deletes."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection, transaction

from portal.audit.models import AppendOnlyError, AuditEntry
from portal.audit.services import record

pytestmark = pytest.mark.django_db


@pytest.fixture
def entry(db):
    return record("node.changed", ("node", "7", "dgx1-1"), changes={"schedulable": [True, False]})


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_api_has_no_write(client_for, cluster_admin, entry, method):
    answer = getattr(client_for(cluster_admin), method)("/api/v1/audit/", {}, format="json")
    assert answer.status_code == 405
    assert AuditEntry.objects.get(pk=entry.pk).changes == {"schedulable": [True, False]}
    assert AuditEntry.objects.count() == 2  # it and the admin's sign-in


def test_the_model_refuses_to_save_an_entry_again(entry):
    entry.note = "tampered"
    with pytest.raises(AppendOnlyError):
        entry.save()
    with pytest.raises(AppendOnlyError):
        entry.delete()
    assert AuditEntry.objects.get().note == ""


def test_the_queryset_refuses_updates_and_deletes(entry):
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.filter(pk=entry.pk).update(note="tampered")
    with pytest.raises(AppendOnlyError):
        AuditEntry.objects.all().delete()
    assert AuditEntry.objects.count() == 1


@pytest.mark.parametrize(
    "statement",
    ["UPDATE audit_auditentry SET note = 'tampered'",
     "UPDATE audit_auditentry SET actor_username = 'someone-else'",
     "DELETE FROM audit_auditentry"],
)  # fmt: skip
def test_the_database_refuses_them_too(entry, statement):
    with (pytest.raises(IntegrityError, match="append-only"), transaction.atomic(),
          connection.cursor() as cursor):  # fmt: skip
        cursor.execute(statement)
    assert AuditEntry.objects.get().note == ""


def test_an_entry_outlives_its_actors_account(client_for, cluster_admin, nodes):
    client_for(cluster_admin).patch("/api/v1/nodes/dgx1-1/", {"pool": "a100"}, format="json")
    get_user_model().objects.filter(username="root").delete()  # the one UPDATE allowed
    entry = AuditEntry.objects.get(action="node.changed")
    assert (entry.actor_id, entry.actor_username) == (None, "root")
