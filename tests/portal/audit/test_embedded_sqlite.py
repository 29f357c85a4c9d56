"""The embedded default's SQLite guards the audit log as PostgreSQL does: its triggers refuse an
UPDATE or a DELETE, let a deleted account's entries keep their username, and let the retention
pruning through (issue 22). Run in a `manage.py` process of its own on a fresh SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow

SCRIPT = """
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.db import IntegrityError, connection
from django.utils import timezone
from portal.audit import retention
from portal.audit.models import AuditEntry
from portal.audit.services import new_entry, record

user = get_user_model().objects.create_user("zed")
record("node.changed", ("node", "1", "dgx1-1"), actor=user)
old = new_entry("job.submitted", ("job", "2", "team-a/old"))
old.time = timezone.now() - timedelta(days=400)
old.save()
for statement in ("UPDATE audit_auditentry SET note = 'x'", "DELETE FROM audit_auditentry"):
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
        print("ALLOWED", statement)
    except IntegrityError as exc:
        print("REFUSED", exc)
user.delete()
print("ACTOR", list(AuditEntry.objects.filter(action="node.changed").values_list(
    "actor_id", "actor_username")))
print("PRUNED", retention.prune(), AuditEntry.objects.count())
"""


def test_sqlite_refuses_changes_and_lets_pruning_through(tmp_path):
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path / 'allot.sqlite3'}",
           "ALLOT_AUDIT_RETENTION_DAYS": "365", "PYTHONPATH": str(ROOT)}  # fmt: skip
    env.pop("REDIS_URL", None)
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "-v0"], env=env, check=True, timeout=300,
                   capture_output=True)  # fmt: skip
    out = subprocess.run([*manage, "shell", "-c", SCRIPT], env=env, check=True, timeout=120,
                         capture_output=True, text=True).stdout  # fmt: skip
    assert "ALLOWED" not in out, out
    assert out.count("REFUSED audit entries are append-only") == 2, out
    assert "ACTOR [(None, 'zed')]" in out, out
    assert "PRUNED 1 1" in out, out
