"""Clients signed in as the personas (a session, as the browser and `allot` use the API), and the
entries recorded for an action."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from portal.audit.models import AuditEntry


@pytest.fixture
def client_for(db):
    """`client_for(user, address)` -> an API client signed in as `user`, its requests coming
    from `address`."""

    def make(user=None, address: str = "198.51.100.7") -> APIClient:
        client = APIClient(REMOTE_ADDR=address)
        if user is not None:
            client.force_login(user)
        return client

    return make


def entries(action: str, **filters) -> list[AuditEntry]:
    """The entries of `action`, oldest first."""
    return list(AuditEntry.objects.filter(action=action, **filters).order_by("time", "id"))


def only(action: str, **filters) -> AuditEntry:
    """The one entry of `action`."""
    found = entries(action, **filters)
    assert len(found) == 1, [f"{e.action} {e.target_label} {e.changes}" for e in found]
    return found[0]
