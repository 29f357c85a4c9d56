"""Shared test set-up: real PostgreSQL, no background cycle, and the personas of the portal.

Unless DATABASE_URL is set, tests use postgres://postgres@127.0.0.1:5432/allot (pytest-django
creates and drops `test_allot`). pytest-django sets Django up before any conftest runs (with the
embedded SQLite default when DATABASE_URL is unset), so the database is switched here and
Django's connection handler is rebuilt before any test touches it. The variables are also
exported for subprocesses (Celery workers, servers) that tests start.
"""

from __future__ import annotations

import os

import dj_database_url
import pytest

TEST_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/allot"

os.environ.setdefault("DATABASE_URL", TEST_DATABASE_URL)
os.environ.setdefault("ALLOT_SIM_START_DELAY_S", "0")
os.environ.setdefault("ALLOT_SIM_JUPYTER", "0")  # the Jupyter tests turn real servers on
os.environ.setdefault("ALLOT_NOTIFICATIONS", "0")  # the notification tests turn them on
os.environ.setdefault("ALLOT_EMBEDDED_CYCLE", "0")
os.environ.setdefault("ALLOT_ETA_INTERVAL_S", "0")  # the ETA tests refresh them by hand


def _configure_django() -> None:
    """Point the already-loaded settings at the test database and make tests quick."""
    from django.conf import settings

    if not settings.configured:
        return
    settings.DATABASES = {"default": dj_database_url.parse(os.environ["DATABASE_URL"])}
    _reset_connections()
    settings.ALLOT_SIM_START_DELAY_S = float(os.environ["ALLOT_SIM_START_DELAY_S"])
    settings.ALLOT_SIM_JUPYTER = os.environ["ALLOT_SIM_JUPYTER"] not in ("0", "", "false")
    settings.ALLOT_NOTIFICATIONS = os.environ["ALLOT_NOTIFICATIONS"] not in ("0", "", "false")
    settings.ALLOT_ETA_INTERVAL_S = float(os.environ["ALLOT_ETA_INTERVAL_S"])
    settings.ALLOT_EMBEDDED_CYCLE = os.environ["ALLOT_EMBEDDED_CYCLE"] not in ("0", "", "false")
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def _reset_connections() -> None:
    """Forget connections made from the old DATABASES (model set-up opens one to read limits)."""
    from asgiref.local import Local
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close()
    connections._settings = None
    connections.__dict__.pop("settings", None)  # a cached_property over settings.DATABASES
    connections._connections = Local(connections.thread_critical)


_configure_django()


# --- Personas and a small cluster --------------------------------------------------------------


@pytest.fixture
def nodes(db):
    """Two DGX-1 nodes of 8 x V100 32 GB in pool "default"."""
    from portal.cluster.models import Node

    return [
        Node.objects.create(name=name, gpus=8, gpu_memory_mib=32768, pool="default")
        for name in ("dgx1-1", "dgx1-2")
    ]


@pytest.fixture
def team_a(db):
    """Project team-a, quota 4."""
    from portal.tenancy.models import Project

    return Project.objects.create(name="team-a", quota=4)


@pytest.fixture
def team_b(db):
    """Project team-b, quota 2."""
    from portal.tenancy.models import Project

    return Project.objects.create(name="team-b", quota=2)


def _user(username: str, *, staff: bool = False, project=None, role: str | None = None):
    from django.contrib.auth import get_user_model

    from portal.tenancy.models import Membership

    user = get_user_model().objects.create_user(
        username=username, password="x-test-password-1", is_staff=staff, is_superuser=staff
    )
    if project is not None:
        Membership.objects.create(user=user, project=project, role=role)
    return user


@pytest.fixture
def cluster_admin(db):
    """A cluster admin (is_staff): sees and changes everything."""
    return _user("root", staff=True)


@pytest.fixture
def owner(team_a):
    """The owner persona: admin of team-a."""
    return _user("alice", project=team_a, role="admin")


@pytest.fixture
def member(team_a):
    """The member persona: researcher in team-a."""
    return _user("bob", project=team_a, role="researcher")


@pytest.fixture
def viewer(team_a):
    """A viewer of team-a: reads, never writes."""
    return _user("vera", project=team_a, role="viewer")


@pytest.fixture
def outsider(team_b):
    """The outsider persona: a researcher of team-b, nothing in team-a."""
    return _user("eve", project=team_b, role="researcher")


@pytest.fixture
def api(db):
    """`api(user)` -> a DRF client authenticated with `user`'s token (`api()` = anonymous)."""
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def make(user=None) -> APIClient:
        client = APIClient()
        if user is not None:
            token, _ = Token.objects.get_or_create(user=user)
            client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
        return client

    return make
