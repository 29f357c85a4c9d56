"""Backup and restore lose nothing (issue 35): a portal's data made through the REST API and run
by the scheduler (nodes, a department, projects, members, jobs that completed, were evicted,
stopped or still run, their runs and events, the audit log, usage samples) is backed up with
`manage.py backup`, restored with `manage.py restore` into a new PostgreSQL database, and every
row of every table is there with the same values; the accounting and audit CSVs are the same
byte for byte. A restore refuses a database that has tables unless `--force`, refuses a file
that is not a backup of its kind, and changes nothing when the backup is damaged."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import dj_database_url
import psycopg
import pytest
from django.apps import apps
from django.db import connection
from django.utils import timezone

from portal.jobs.models import Job, JobRun, RunEnd, Status
from tests.paths import ROOT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
RESTORED = f"{connection.settings_dict['NAME']}_restored"
TODAY = datetime.now(UTC).date()
ACCOUNTING = {"since": f"{TODAY - timedelta(days=3)}", "until": f"{TODAY + timedelta(days=3)}",
              "period": "day", "format": "csv"}  # fmt: skip


def manage(*args: str, database: str, check: bool = True) -> subprocess.CompletedProcess:
    """`manage.py ARGS` in a process of its own, on the PostgreSQL database `database`."""
    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + f"/{database}"
    env = {**os.environ, "DATABASE_URL": url, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, str(ROOT / "manage.py"), *args], env=env,
                            capture_output=True, text=True, timeout=300)  # fmt: skip
    assert not check or result.returncode == 0, result.stdout + result.stderr
    return result


def admin_sql(statement: str) -> None:
    """CREATE or DROP a database, outside any transaction."""
    db = dj_database_url.parse(os.environ["DATABASE_URL"])
    with psycopg.connect(host=db["HOST"], port=db["PORT"] or 5432, user=db["USER"],
                         password=db["PASSWORD"] or None, dbname="postgres",
                         autocommit=True) as admin:  # fmt: skip
        admin.execute(statement)


@pytest.fixture
def new_database():
    """An empty PostgreSQL database beside the test's, dropped at the end."""
    admin_sql(f'DROP DATABASE IF EXISTS "{RESTORED}" WITH (FORCE)')
    admin_sql(f'CREATE DATABASE "{RESTORED}"')
    yield RESTORED
    admin_sql(f'DROP DATABASE IF EXISTS "{RESTORED}" WITH (FORCE)')


@pytest.fixture
def portal_data(api, cluster_admin, cluster, clock):
    """A small portal's life: made over REST as its users would, run by the scheduler."""
    admin = api(cluster_admin)
    for body, url in [
        ({"name": "dgx1-1", "gpus": 8, "cpu": "80", "memory": "512Gi"}, "nodes"),
        ({"name": "dgx1-2", "gpus": 8, "cpu": "80", "memory": "512Gi"}, "nodes"),
        ({"name": "vision", "quota": 8, "cpu_limit": "64", "memory_limit": "512Gi"},
         "departments"),
        ({"name": "team-a", "quota": 8, "department": "vision"}, "projects"),
        ({"name": "team-b", "quota": 0, "limit": 16}, "projects"),
        ({"username": "bob", "password": "a-long-test-password-7"}, "users"),
    ]:  # fmt: skip
        response = admin.post(f"/api/v1/{url}/", body, format="json")
        assert response.status_code == 201, response.content
    for project in ("team-a", "team-b"):
        body = {"username": "bob", "role": "researcher"}
        response = admin.post(f"/api/v1/projects/{project}/members/", body, format="json")
        assert response.status_code == 201, response.content
    from django.contrib.auth import get_user_model

    bob = api(get_user_model().objects.get(username="bob"))
    submit(bob, "team-b", "b-big", gpus=8, sim_duration_s=100_000, cpu="8", memory="64Gi")
    submit(bob, "team-a", "a-done", gpus=1, sim_duration_s=60)
    cluster.settle()
    clock.advance(600)  # a-done completes
    cluster.settle()
    submit(bob, "team-b", "b-more", gpus=8, sim_duration_s=100_000)
    cluster.settle()
    clock.advance(300)
    submit(bob, "team-a", "a-need", gpus=8, sim_duration_s=100_000)
    cluster.settle()  # team-a reclaims its quota: a team-b job is evicted
    clock.advance(300)
    cluster.settle()
    assert bob.post("/api/v1/jobs/team-a/a-need/stop/").status_code in (200, 202)
    cluster.settle()
    clock.advance(300)
    cluster.settle()
    runs = JobRun.objects.values_list("job__name", "end")
    assert ("a-done", RunEnd.COMPLETED) in runs and ("b-big", RunEnd.EVICTED) in runs, runs
    assert Job.objects.get(name="a-need").status == Status.STOPPED
    return admin


def submit(client, project: str, name: str, **fields) -> None:
    body = {"project": project, "name": name, "image": "python:3.11", **fields}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content


def every_row() -> dict[str, list[tuple]]:
    """Every row of every model's table (auto-created many-to-many tables included), by id."""
    tables = {}
    for model in apps.get_models(include_auto_created=True):
        if not model._meta.managed or model._meta.proxy:
            continue
        columns = [field.column for field in model._meta.concrete_fields]
        with connection.cursor() as cursor:
            quoted = ", ".join(connection.ops.quote_name(column) for column in columns)
            cursor.execute(f"SELECT {quoted} FROM {model._meta.db_table} ORDER BY 1")
            tables[model._meta.db_table] = cursor.fetchall()
    return tables


def exports(admin) -> tuple[bytes, bytes]:
    """The accounting CSV (per project, then per user) and the audit log's CSV, as bytes."""
    files = []
    for url, params in [("accounting", ACCOUNTING), ("accounting", {**ACCOUNTING,
                        "group_by": "user"}), ("audit", {"format": "csv"})]:  # fmt: skip
        response = admin.get(f"/api/v1/{url}/", params)
        assert response.status_code == 200, response.content
        files.append(b"".join(response.streaming_content))
    return tuple(files)


def read_from(database: str, read):
    """`read()` with Django's connection on `database` for its duration."""
    original = connection.settings_dict["NAME"]
    connection.close()
    connection.settings_dict["NAME"] = database
    try:
        return read()
    finally:
        connection.close()
        connection.settings_dict["NAME"] = original


def test_a_restored_backup_has_every_row_and_the_same_accounting_csv(
    portal_data, new_database, tmp_path, clock, monkeypatch
):
    monkeypatch.setattr(timezone, "now", clock)  # the runs, stamped by the cycle's clock, are past
    csvs = exports(portal_data)  # first: a token's use is a write (its last_used)
    before = every_row()
    assert before["jobs_jobrun"] and before["audit_auditentry"] and before["jobs_jobevent"]
    assert b"team-a" in csvs[0] and b"bob" in csvs[1] and b"job.submitted" in csvs[2]
    dump = tmp_path / "allot.dump"
    said = manage("backup", "--output", str(dump), database=connection.settings_dict["NAME"])
    assert "Backed up PostgreSQL database" in said.stdout
    said = manage("restore", str(dump), database=new_database)
    assert "Restored" in said.stdout
    after, csvs_after = read_from(new_database, lambda: (every_row(), exports(portal_data)))
    assert after.keys() == before.keys()
    for table, rows in before.items():
        assert after[table] == rows, table
    assert csvs_after == csvs


def test_a_restore_refuses_a_database_with_tables_and_replaces_it_when_forced(
    portal_data, new_database, tmp_path
):
    dump = tmp_path / "allot.dump"
    manage("backup", "--output", str(dump), database=connection.settings_dict["NAME"])
    manage("migrate", "-v0", database=new_database)
    refused = manage("restore", str(dump), database=new_database, check=False)
    assert refused.returncode == 1
    assert "is not empty" in refused.stderr and "--force" in refused.stderr
    assert read_from(new_database, lambda: Job.objects.count()) == 0  # nothing written
    manage("restore", str(dump), "--force", database=new_database)
    before = every_row()
    after = read_from(new_database, every_row)
    assert {table: rows for table, rows in after.items() if rows} == {
        table: rows for table, rows in before.items() if rows
    }


def test_a_damaged_or_foreign_backup_changes_nothing(portal_data, new_database, tmp_path):
    dump = tmp_path / "allot.dump"
    manage("backup", "--output", str(dump), database=connection.settings_dict["NAME"])
    damaged = tmp_path / "damaged.dump"
    data = bytearray(dump.read_bytes())
    for offset in range(len(data) - 400, len(data) - 350):  # in the last table's data
        data[offset] ^= 0x55
    damaged.write_bytes(bytes(data))
    refused = manage("restore", str(damaged), database=new_database, check=False)
    assert refused.returncode == 1 and "Restore refused" in refused.stderr, refused.stderr
    assert read_from(new_database, connection.introspection.table_names) == []
    text = tmp_path / "notes.txt"
    text.write_text("not a backup\n")
    refused = manage("restore", str(text), database=new_database, check=False)
    assert "is not a backup made by manage.py backup" in refused.stderr
    missing = manage("restore", str(tmp_path / "nothing.dump"), database=new_database,
                     check=False)  # fmt: skip
    assert missing.returncode == 1 and "no such file" in missing.stderr
