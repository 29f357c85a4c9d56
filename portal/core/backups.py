"""Backups of the portal's database and their restore (issue 35), for `manage.py backup` and
`manage.py restore`.

PostgreSQL is dumped and restored by its own tools (`pg_dump -Fc`, `pg_restore`), which know
every object the migrations made (the audit log's append-only trigger and its function, the
partial unique indexes, the sequences' positions) and read a dump taken by an older Allot
before `manage.py migrate` brings it up to date. The embedded default's SQLite is copied with
SQLite's online backup, which reads a consistent database while the portal keeps writing.

A restore writes all or nothing: PostgreSQL's runs as one transaction (`pg_restore
--single-transaction --exit-on-error`), and SQLite's backup replaces the database's pages under
one lock. It refuses a database that
already has tables unless forced, so a restore never lands on top of live data by mistake.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import tempfile
from contextlib import closing
from pathlib import Path

from django.db.backends.base.base import BaseDatabaseWrapper

POSTGRES_MAGIC = b"PGDMP"  # the first bytes of pg_dump's custom format
SQLITE_MAGIC = b"SQLite format 3\x00"
TIMEOUT_S = 6 * 3600  # a stuck tool is an error after a night, not a hang for ever


class BackupError(Exception):
    """A backup or restore that was refused or failed; the message tells the operator why."""


def backup(connection: BaseDatabaseWrapper, output: Path) -> str:
    """Write the whole database of `connection` to `output` (replaced only once complete);
    return what was backed up, in words."""
    output = Path(output)
    if not output.parent.is_dir():
        raise BackupError(f"{output.parent} is not a directory")
    if output.is_dir():
        raise BackupError(f"{output} is a directory: name the backup file in it")
    partial = Path(tempfile.mkstemp(prefix=f".{output.name}.", dir=output.parent)[1])
    try:
        _backup(connection, partial)
        partial.replace(output)
    finally:
        partial.unlink(missing_ok=True)
    return f"{_describe(connection)} to {output} ({output.stat().st_size} bytes)"


def _backup(connection: BaseDatabaseWrapper, partial: Path) -> None:
    if connection.vendor == "postgresql":
        _tool(["pg_dump", "--format=custom", "--no-owner", "--no-privileges",
               f"--file={partial}"], connection)  # fmt: skip
    elif connection.vendor == "sqlite":
        with _sqlite(connection.settings_dict["NAME"]) as source, _sqlite(partial) as copy:
            source.backup(copy)
    else:
        raise BackupError(f"backups need PostgreSQL or SQLite, not {connection.vendor}")


def restore(connection: BaseDatabaseWrapper, source: Path, *, force: bool = False) -> str:
    """Restore the backup `source` into the database of `connection`, all or nothing; refuse
    a database that has tables unless `force` (then they are replaced); return what was
    restored, in words."""
    source = Path(source)
    if not source.is_file():
        raise BackupError(f"{source}: no such file")
    _check_format(connection, source)
    tables = connection.introspection.table_names()
    if tables and not force:
        raise BackupError(
            f"{_describe(connection)} is not empty ({len(tables)} tables, e.g. {tables[0]}): "
            "restore into a new, empty database, or pass --force to replace everything in it"
        )
    connection.close()  # the restore writes through its own connection
    if connection.vendor == "postgresql":
        _restore_postgres(connection, source)
    else:
        with _sqlite(source) as backup_db, _sqlite(connection.settings_dict["NAME"]) as target:
            backup_db.backup(target)
    return f"{source} into {_describe(connection)}"


def _check_format(connection: BaseDatabaseWrapper, source: Path) -> None:
    """Refuse a file that is not a backup of this kind of database before touching anything."""
    expected = {"postgresql": POSTGRES_MAGIC, "sqlite": SQLITE_MAGIC}.get(connection.vendor)
    if expected is None:
        raise BackupError(f"backups need PostgreSQL or SQLite, not {connection.vendor}")
    with source.open("rb") as file:
        head = file.read(len(SQLITE_MAGIC))
    if not head.startswith(expected):
        kind = {POSTGRES_MAGIC: "a PostgreSQL dump", SQLITE_MAGIC: "an SQLite database"}
        found = next((words for magic, words in kind.items() if head.startswith(magic)), None)
        raise BackupError(
            f"{source} is {found or 'not a backup made by manage.py backup'}, and the "
            f"database is {connection.vendor}: restore a backup of the same kind of database"
        )
    if connection.vendor == "postgresql":  # the table of contents reads: not cut short there
        _tool(["pg_restore", "--list", str(source)], connection, stdout=subprocess.DEVNULL)


def _restore_postgres(connection: BaseDatabaseWrapper, source: Path) -> None:
    """pg_restore in one transaction, connected (so it writes only what this server's version
    reads): a dump cut short or a statement that fails leaves the database as it was. With
    --clean, what the dump holds is dropped first (a forced restore replaces it)."""
    database = connection.settings_dict["NAME"]
    _tool(["pg_restore", "--no-owner", "--no-privileges", "--clean", "--if-exists",
           "--single-transaction", "--exit-on-error", f"--dbname={database}", str(source)],
          connection, what="the restore failed and changed nothing")  # fmt: skip


def _tool(command: list[str], connection: BaseDatabaseWrapper, what: str = "", **options) -> None:
    """Run a PostgreSQL client tool on `connection`'s database; its error becomes ours."""
    if shutil.which(command[0]) is None:
        raise BackupError(f"{command[0]} is not installed (PostgreSQL's client tools)")
    result = subprocess.run(command, env=_environment(connection), stderr=subprocess.PIPE,
                            text=True, timeout=TIMEOUT_S, check=False, **options)  # fmt: skip
    if result.returncode != 0:
        said = result.stderr.strip() or f"exit status {result.returncode}, and no message"
        raise BackupError(f"{what or command[0] + ' failed'}: {said}")


def _environment(connection: BaseDatabaseWrapper) -> dict[str, str]:
    """The client tools' libpq variables for the database DATABASE_URL names (the password
    in the environment, never on a command line that `ps` shows)."""
    db = connection.settings_dict
    libpq = {"PGDATABASE": db["NAME"], "PGHOST": db["HOST"], "PGPORT": db["PORT"],
             "PGUSER": db["USER"], "PGPASSWORD": db["PASSWORD"],
             "PGSSLMODE": db.get("OPTIONS", {}).get("sslmode")}  # fmt: skip
    return {**os.environ, **{name: str(value) for name, value in libpq.items() if value}}


def _sqlite(path) -> closing[sqlite3.Connection]:
    """A connection to the SQLite file `path`, closed by `with` (sqlite3's own `with` only
    commits)."""
    return closing(sqlite3.connect(path))


def _describe(connection: BaseDatabaseWrapper) -> str:
    db = connection.settings_dict
    if connection.vendor == "postgresql":
        return f"PostgreSQL database {db['NAME']!r} on {db['HOST'] or 'localhost'}"
    return f"{connection.vendor} database {db['NAME']}"
