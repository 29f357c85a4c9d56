"""`allot reservations` (issue 37, R22): a cluster admin books from the command line, an
overlapping booking over capacity is refused with the API's field and reason, a member lists
the team's bookings with their next slot, and the admin cancels one."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone

from portal.reservations.models import Reservation
from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def test_allot_reservations_books_refuses_lists_and_cancels(
    live_server, tmp_path, cluster_admin, member, nodes, team_a
):
    def allot(user, *args) -> subprocess.CompletedProcess:
        env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(user, "t")[1],
                   ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
        return subprocess.run([sys.executable, "-m", "cli", "reservations", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip

    start = (timezone.localtime() + timedelta(days=2)).replace(minute=0, second=0, microsecond=0)
    end = start + timedelta(hours=3)
    at = [f"--start={start:%Y-%m-%dT%H:%M}", f"--end={end:%Y-%m-%dT%H:%M}"]
    done = allot(cluster_admin, "book", "deadline", "-p", "team-a", "-g", "12", *at)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Reservation deadline booked: 12 GPUs for team-a")
    done = allot(cluster_admin, "book", "more", "-p", "team-a", "-g", "8", "--weekly", *at)
    assert done.returncode != 0
    assert "gpus" in done.stderr and "20 of its 16 GPUs booked, with 'deadline'" in done.stderr
    assert Reservation.objects.count() == 1
    listed = allot(member)
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1].split()
    assert row[:4] == ["deadline", "team-a", "12", "any"]
    assert row[4:8] == [f"{start:%Y-%m-%d}", f"{start:%H:%M}", "to", f"{end:%Y-%m-%d}"]
    assert row[-1] == "once"
    assert allot(member, "cancel", "deadline").returncode != 0  # a researcher may not
    done = allot(cluster_admin, "cancel", "deadline")
    assert done.returncode == 0 and not Reservation.objects.exists()
    assert allot(member).stdout.strip() == "No reservations."
