"""`manage.py bootstrap`: on an empty database, the admin, the simulated cluster and TR-4858.

Used by `make run`. It changes nothing on a database that already has users, nodes or
projects, so running it again is safe. Migrations themselves create no nodes or projects.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from portal.cluster.models import Node
from portal.tenancy import services
from portal.tenancy.models import Project

# Two NVIDIA DGX-1 of 8 x V100 32 GB and the four teams of TR-4858 (NetApp + Run:AI).
DGX1_NODES = [("dgx1-1", 8, 32768), ("dgx1-2", 8, 32768)]
TR4858_PROJECTS = [("team-a", 4), ("team-b", 2), ("team-c", 2), ("team-d", 8)]


class Command(BaseCommand):
    help = "Create the admin, two simulated DGX-1 nodes and the four TR-4858 projects if empty."

    def handle(self, *args, **options):
        with transaction.atomic():
            self._admin()
            self._cluster()
            self._projects()

    def _admin(self) -> None:
        if get_user_model().objects.exists():
            self.stdout.write("Users exist already; no admin created.")
            return
        username = settings.ALLOT_ADMIN_USERNAME
        password = settings.ALLOT_ADMIN_PASSWORD or secrets.token_urlsafe(12)
        services.create_user(username, password, is_staff=True, is_superuser=True)
        self.stdout.write(self.style.SUCCESS("Created the admin account."))
        self.stdout.write(f"  Sign in at http://127.0.0.1:8000/ as {username!r}")
        if settings.ALLOT_ADMIN_PASSWORD:
            self.stdout.write("  with the password in ALLOT_ADMIN_PASSWORD.")
        else:
            self.stdout.write(f"  with the password {password!r} (shown once; change it).")
        self.stdout.write(f"  API token: python manage.py issue_token {username}")

    def _cluster(self) -> None:
        if Node.objects.exists():
            return
        for name, gpus, memory in DGX1_NODES:
            Node.objects.create(name=name, gpus=gpus, gpu_memory_mib=memory, pool="default")
        self.stdout.write(
            self.style.SUCCESS(
                "Created the simulated cluster: dgx1-1, dgx1-2 (8 x V100 32 GB each)."
            )
        )

    def _projects(self) -> None:
        if Project.objects.exists():
            return
        for name, quota in TR4858_PROJECTS:
            Project.objects.create(name=name, quota=quota)
        listed = ", ".join(f"{name} ({quota} GPUs)" for name, quota in TR4858_PROJECTS)
        self.stdout.write(self.style.SUCCESS(f"Created the TR-4858 projects: {listed}."))
