"""`manage.py restore FILE [--force]`: a backup made by `manage.py backup` put back (issue 35).

All or nothing, into an empty database unless `--force`. A backup of an older Allot is then
brought up to date by `manage.py migrate` (docs/operations.md).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from portal.core.backups import BackupError, restore


class Command(BaseCommand):
    help = "Restore a backup made by `manage.py backup` into the (empty) database."

    def add_arguments(self, parser):
        parser.add_argument("file", type=Path, help="The backup file.")
        parser.add_argument("--force", action="store_true",
                            help="Replace the tables the database already has.")  # fmt: skip

    def handle(self, *args, **options):
        try:
            done = restore(connection, options["file"], force=options["force"])
        except BackupError as exc:
            raise CommandError(f"Restore refused: {exc}") from None
        self.stdout.write(self.style.SUCCESS(f"Restored {done}."))
        self.stdout.write("If the backup came from an older Allot, run `manage.py migrate` now.")
