"""`manage.py bootstrap`: on an empty database, the admin, the simulated cluster and TR-4858.

Used by `make run`. It changes nothing on a database that already has users, nodes or
projects, so running it again is safe. Migrations themselves create no nodes or projects.
"""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from portal.cluster.models import Node
from portal.tenancy import services
from portal.tenancy.models import Project

# Two NVIDIA DGX-1 of 8 x V100 32 GB and the four teams of TR-4858 (NetApp + Run:AI).
DGX1_NODES = [("dgx1-1", 8, 32 * 2**30), ("dgx1-2", 8, 32 * 2**30)]  # GPU memory in bytes
# What a DGX-1 gives pods besides its GPUs (issue 26): 2 x 20-core Xeon E5-2698 v4 with
# hyper-threading (80 CPUs to Kubernetes) and 512 GiB of memory.
DGX1_CPU_MILLIS, DGX1_MEMORY_BYTES = 80_000, 512 * 2**30
TR4858_PROJECTS = [("team-a", 4), ("team-b", 2), ("team-c", 2), ("team-d", 8)]


class Command(BaseCommand):
    help = "Create the admin, two simulated DGX-1 nodes and the four TR-4858 projects if empty."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000/",
                            help="Where the portal will answer, for the sign-in line.")  # fmt: skip

    def handle(self, *args, **options):
        with transaction.atomic():
            sign_in = self._admin(options["url"])
            self._cluster()
            self._projects()
        for line in sign_in:  # last, so it is the line to find above the server's log
            self.stdout.write(line)

    def _admin(self, url: str) -> list[str]:
        """Create the admin on an empty database; the lines that say how to sign in either way."""
        if get_user_model().objects.exists():
            return self._recovery(url)
        username = settings.ALLOT_ADMIN_USERNAME
        password = settings.ALLOT_ADMIN_PASSWORD or secrets.token_urlsafe(12)
        services.create_user(username, password, is_staff=True, is_superuser=True)
        self.stdout.write(self.style.SUCCESS(f"Created the admin account {username!r}."))
        self.stdout.write(f"  API token: {_manage()} issue_token {username}")
        if settings.ALLOT_ADMIN_PASSWORD:
            secret = "the password in ALLOT_ADMIN_PASSWORD"
        else:
            secret = f"the password {password}  (shown once: change it on your page, /me/)"
        return [self.style.WARNING(f"Sign in at {url} as {username} with {secret}")]

    def _recovery(self, url: str) -> list[str]:
        """Users exist: where to sign in, and how to get in when the password is lost."""
        admins = get_user_model().objects.filter(is_staff=True, is_active=True)
        admin = (admins.filter(username=settings.ALLOT_ADMIN_USERNAME).first()
                 or admins.order_by("username").first())  # fmt: skip
        name = admin.get_username() if admin is not None else settings.ALLOT_ADMIN_USERNAME
        return [
            "Users exist already; no admin created.",
            self.style.WARNING(
                f"Sign in at {url} as {name}. Lost the password? Set a new one "
                f"with: {_manage()} changepassword {name}"
            ),
        ]

    def _cluster(self) -> None:
        if Node.objects.exists():
            return
        for name, gpus, memory in DGX1_NODES:
            Node.objects.create(
                name=name, gpus=gpus, gpu_memory_bytes=memory, pool="default",
                cpu_millis=DGX1_CPU_MILLIS, memory_bytes=DGX1_MEMORY_BYTES,
            )  # fmt: skip
        self.stdout.write(
            self.style.SUCCESS(
                "Created the simulated cluster: dgx1-1, dgx1-2 (8 x V100 32 GB, 80 CPUs and "
                "512 GiB each)."
            )
        )

    def _projects(self) -> None:
        if Project.objects.exists():
            return
        for name, quota in TR4858_PROJECTS:
            Project.objects.create(name=name, quota=quota)
        listed = ", ".join(f"{name} ({quota} GPUs)" for name, quota in TR4858_PROJECTS)
        self.stdout.write(self.style.SUCCESS(f"Created the TR-4858 projects: {listed}."))


def _manage() -> str:
    """How to run manage.py as this one runs: .venv/bin/python manage.py under `make run`."""
    python = Path(sys.executable)
    try:
        python = python.relative_to(Path.cwd())
    except ValueError:
        return "python manage.py"
    return f"{python} manage.py"
