"""An upgrade loses nothing (issue 35): a database built and filled by an OLDER Allot, its own
tree taken from git and its own code writing the data (`older_portal.py`), then migrated by
HEAD's `manage.py migrate`, still has every row of every table with every value it had; the
only changes allowed are new columns, new rows and memory counted in bytes where it was MiB.
Migrated back to the older release's migrations (an upgrade rolled back), it has them all again.

The older commit is OLDER: the tip of main when today's work began (the last commit of the
session of 2026-11-27, the release a deployment made yesterday runs). Every migration since is
on the path: the session grants, secret environments, external workloads, projects'
namespaces, the pods outside Allot on nodes, and memory in bytes. CI clones with full history;
a shallow clone skips with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dj_database_url
import psycopg
import pytest

from tests.paths import ROOT

pytestmark = pytest.mark.slow
OLDER = "400c1c5b8798f47725844a41dc6eb2339470f4b1"
MIB = 2**20
# Memory stored in MiB by OLDER, in bytes once issue 33's rename (branch h-qty) is merged:
# (table, MiB column, bytes column).
MEMORY = [("cluster_node", "memory_mib", "memory_bytes"),
          ("cluster_node", "gpu_memory_mib", "gpu_memory_bytes"),
          ("jobs_job", "memory_mib", "memory_bytes"),
          ("jobs_job", "memory_limit_mib", "memory_limit_bytes"),
          ("jobs_job", "gpu_memory_mib", "gpu_memory_bytes"),
          ("jobs_jobrun", "memory_mib", "memory_bytes"),
          ("jobs_usagesample", "allocated_memory_mib", "allocated_memory_bytes"),
          ("jobs_usagerollup", "memory_mib_sum", "memory_bytes_sum"),
          ("tenancy_department", "memory_limit_mib", "memory_limit_bytes"),
          ("tenancy_project", "memory_limit_mib", "memory_limit_bytes"),
          ("tenancy_project", "default_memory_mib", "default_memory_bytes")]  # fmt: skip

Rows = dict[str, dict[tuple, dict[str, object]]]


def connect(database: str) -> psycopg.Connection:
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    return psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"],
                           password=db["PASSWORD"] or None, dbname=database,
                           autocommit=True)  # fmt: skip


def every_row(database: str) -> Rows:
    """Every row of every table, by primary key (the whole row where a table has none)."""
    rows: Rows = {}
    with connect(database) as db:
        tables = [name for (name,) in db.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]  # fmt: skip
        for table in tables:
            keys = [name for (name,) in db.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid"
                " AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary"
                " ORDER BY a.attnum", [f'"{table}"'])]  # fmt: skip
            cursor = db.execute(f'SELECT * FROM "{table}"')
            columns = [column.name for column in cursor.description]
            rows[table] = {}
            for values in cursor.fetchall():
                row = dict(zip(columns, values, strict=True))
                rows[table][tuple(row[k] for k in keys) if keys else tuple(values)] = row
    return rows


def losses(before: Rows, after: Rows) -> list[str]:
    """What `after` lost of `before`: a table, a row, a column or a value (memory in MiB may
    live on in bytes, x 2**20, under its new name). Empty when nothing was lost."""
    lost = []
    for table, rows in before.items():
        if table not in after:
            lost.append(f"table {table}")
            continue
        for key, row in rows.items():
            new = after[table].get(key)
            if new is None:
                lost.append(f"{table} row {key}")
                continue
            lost += [f"{table} row {key}: {column}={value!r}" for column, value in row.items()
                     if not _kept(table, column, value, new)]  # fmt: skip
    return lost


def _kept(table: str, column: str, value, new: dict) -> bool:
    renamed = next((b for t, m, b in MEMORY if (t, m) == (table, column)), None)
    if renamed in new and column not in new:
        return new[renamed] == (None if value is None else value * MIB)
    return column in new and new[column] == value


def manage(tree: Path, *args: str, database: str) -> str:
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{database}"
    env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(tree)}
    result = subprocess.run([sys.executable, str(tree / "manage.py"), *args], env=env, cwd=tree,
                            capture_output=True, text=True, timeout=600)  # fmt: skip
    assert result.returncode == 0, f"{tree}: manage.py {args[0]}:\n{result.stdout}{result.stderr}"
    return result.stdout


@pytest.fixture
def older_tree(tmp_path) -> Path:
    """OLDER's files, from this clone's history."""
    git = ["git", "-C", str(ROOT)]
    if subprocess.run([*git, "cat-file", "-e", f"{OLDER}^{{commit}}"]).returncode != 0:
        shallow = subprocess.run([*git, "rev-parse", "--is-shallow-repository"],
                                 capture_output=True, text=True).stdout.strip()  # fmt: skip
        pytest.skip(f"commit {OLDER[:7]} is not in this clone's history (shallow: {shallow}): "
                    "clone with full history to test upgrades from it")  # fmt: skip
    archive = subprocess.run([*git, "archive", "--format=tar", OLDER], capture_output=True,
                             check=True).stdout  # fmt: skip
    tree = tmp_path / "older"
    tree.mkdir()
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


@pytest.fixture
def upgrade_database():
    """A new, empty PostgreSQL database, dropped at the end."""
    name = f"{dj_database_url.parse(os.environ['DATABASE_URL'])['NAME']}_upgrade"
    with connect("postgres") as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    yield name
    with connect("postgres") as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_database_of_the_older_release_migrates_to_head_and_back_with_every_row(
    older_tree, upgrade_database
):
    manage(older_tree, "migrate", "-v0", database=upgrade_database)
    script = (Path(__file__).parent / "older_portal.py").read_text()
    manage(older_tree, "shell", "-c", script, database=upgrade_database)
    before = every_row(upgrade_database)
    for table in ("jobs_job", "jobs_jobrun", "jobs_jobevent", "audit_auditentry",
                  "jobs_usagesample", "jobs_usagerollup", "tenancy_apitoken",
                  "notify_delivery", "tenancy_ssoidentity"):  # fmt: skip
        assert before[table], f"the older portal wrote no {table}"
    runs = {(row["job_name"], row["end"], row["job_id"] is None)
            for row in before["jobs_jobrun"].values()}  # fmt: skip
    assert {("a-done", "completed", False), ("b-big", "evicted", False),
            ("a-need", "stopped", False), ("a-gone", "completed", True)} <= runs, runs  # fmt: skip

    manage(ROOT, "migrate", "-v0", database=upgrade_database)

    after = every_row(upgrade_database)
    assert losses(before, after) == []
    pending = manage(ROOT, "migrate", "--check", "--plan", database=upgrade_database)
    assert "No planned migration operations" in pending

    for app, leaf in leaves(older_tree).items():  # an upgrade rolled back: `migrate APP LEAF`
        manage(ROOT, "migrate", "-v0", app, leaf, database=upgrade_database)
    assert losses(before, every_row(upgrade_database)) == []


def leaves(tree: Path) -> dict[str, str]:
    """The last migration of each of the portal's apps in `tree`."""
    return {folder.parent.name: max(path.stem for path in folder.glob("[0-9][0-9][0-9][0-9]_*.py"))
            for folder in sorted(tree.glob("portal/*/migrations"))
            if any(folder.glob("0001_*.py"))}  # fmt: skip


def test_a_lost_table_row_column_or_value_is_named():
    before = {"jobs_job": {(1,): {"id": 1, "memory_mib": 1024, "name": "a"},
                           (2,): {"id": 2, "memory_mib": None, "name": "b"}},
              "jobs_jobrun": {(1,): {"id": 1, "logs": "x"}}}  # fmt: skip
    in_bytes = {"jobs_job": {(1,): {"id": 1, "memory_bytes": 1024 * MIB, "name": "a", "new": 0},
                             (2,): {"id": 2, "memory_bytes": None, "name": "b", "new": 0}},
                "jobs_jobrun": {(1,): {"id": 1, "logs": "x"},
                                (2,): {"id": 2, "logs": ""}}}  # fmt: skip
    assert losses(before, in_bytes) == []
    assert losses(before, {"jobs_job": before["jobs_job"]}) == ["table jobs_jobrun"]
    assert losses(before, {**in_bytes, "jobs_jobrun": {}}) == ["jobs_jobrun row (1,)"]
    truncated = {**in_bytes, "jobs_jobrun": {(1,): {"id": 1, "logs": ""}}}
    assert losses(before, truncated) == ["jobs_jobrun row (1,): logs='x'"]
    dropped = {**in_bytes, "jobs_job": {**in_bytes["jobs_job"], (2,): {"id": 2, "name": "b"}}}
    assert losses(before, dropped) == ["jobs_job row (2,): memory_mib=None"]
    unconverted = {**in_bytes, "jobs_job": {**in_bytes["jobs_job"],
                   (1,): {"id": 1, "memory_bytes": 1024, "name": "a"}}}  # fmt: skip
    assert losses(before, unconverted) == ["jobs_job row (1,): memory_mib=1024"]
