"""`manage.py backup --output FILE`: the whole database in one file (issue 35).

PostgreSQL is dumped with `pg_dump -Fc` over DATABASE_URL's connection, the embedded default's
SQLite copied with SQLite's online backup; both while the portal runs. `manage.py restore FILE`
puts it back (docs/operations.md).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from portal.core.backups import BackupError, backup


class Command(BaseCommand):
    help = "Back up the whole database (pg_dump -Fc, or SQLite's online backup) to a file."

    def add_arguments(self, parser):
        parser.add_argument(
            "--output", "-o", required=True, type=Path,
            help="The file to write (replaced only once the backup is whole).",
        )  # fmt: skip

    def handle(self, *args, **options):
        try:
            done = backup(connection, options["output"])
        except BackupError as exc:
            raise CommandError(f"Backup refused: {exc}") from None
        self.stdout.write(self.style.SUCCESS(f"Backed up {done}."))
