"""The embedded default's SQLite is backed up and restored whole too (issue 35): `make run`'s
database, made by `migrate` and `bootstrap`, comes back statement for statement in a new file;
a restore refuses a database with tables unless `--force`. Run in `manage.py` processes of their
own, as an operator runs them."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import closing

import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow


def manage(database, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "PYTHONPATH": str(ROOT)}
    env.pop("REDIS_URL", None)
    return subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def dump(database) -> list[str]:
    with closing(sqlite3.connect(database)) as db:
        return list(db.iterdump())


def test_the_embedded_sqlite_is_restored_whole_into_a_new_file(tmp_path):
    portal, restored, backup = tmp_path / "allot.sqlite3", tmp_path / "new.sqlite3", tmp_path / "b"
    for step in (["migrate", "-v0"], ["bootstrap"], ["backup", "--output", str(backup)]):
        done = manage(portal, *step)
        assert done.returncode == 0, done.stdout + done.stderr
    assert "Backed up sqlite database" in done.stdout
    for output, words in [(tmp_path, "is a directory"), (tmp_path / "no" / "b", "is not a dir")]:
        refused = manage(portal, "backup", "--output", str(output))
        assert refused.returncode == 1 and words in refused.stderr, refused.stderr
    done = manage(restored, "restore", str(backup))
    assert done.returncode == 0 and "Restored" in done.stdout, done.stdout + done.stderr
    assert dump(restored) == dump(portal)
    assert any("team-a" in line for line in dump(restored))
    refused = manage(restored, "restore", str(backup))
    assert refused.returncode == 1 and "is not empty" in refused.stderr, refused.stderr
    with closing(sqlite3.connect(restored)) as db, db:
        db.execute("UPDATE tenancy_project SET quota = 99")  # what the forced restore replaces
    assert dump(restored) != dump(portal)
    forced = manage(restored, "restore", str(backup), "--force")
    assert forced.returncode == 0, forced.stderr
    assert dump(restored) == dump(portal)
