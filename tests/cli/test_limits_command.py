"""`allot limits` (issue 36): the project's admin sets the default and a member's override from
the command line, a bad value is refused with the API's field and reason, a member lists the
limits with the default first and may not change them, and the admin unsets the override."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from portal.tenancy.models import UserLimit
from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT

pytestmark = pytest.mark.django_db(transaction=True)


def test_allot_limits_sets_refuses_lists_and_unsets(live_server, tmp_path, owner, member):
    def allot(user, *args) -> subprocess.CompletedProcess:
        env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(user, "t")[1],
                   ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
        return subprocess.run([sys.executable, "-m", "cli", "limits", *args], cwd=ROOT,
                              env=env, capture_output=True, text=True, timeout=60)  # fmt: skip

    done = allot(owner, "set", "team-a", "--max-gpus", "2", "--max-pending", "10")
    assert done.returncode == 0, done.stderr
    assert "the project default: max_gpus 2.0, max_running none, max_pending 10" in done.stdout
    done = allot(owner, "set", "team-a", "-u", "bob", "--max-running", "-1")
    assert done.returncode != 0
    assert "max_running" in done.stderr and "greater than or equal to 0" in done.stderr
    done = allot(owner, "set", "team-a", "-u", "bob", "--max-running", "3")
    assert done.returncode == 0, done.stderr
    done = allot(owner, "set", "team-a", "--max-gpus", "none", "--max-running", "4")
    assert done.returncode == 0, done.stderr  # a PATCH of the default, not a second default
    default = UserLimit.objects.get(user=None)
    assert (default.max_gpus, default.max_running, default.max_pending) == (None, 4, 10)
    listed = allot(member, "list", "team-a")
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    assert rows == [["(project", "default)", "none", "4", "10", "none"],
                    ["bob", "default", "3", "default", "default"]]  # fmt: skip
    refused = allot(member, "unset", "team-a", "-u", "bob")
    assert refused.returncode != 0 and "Only the project's admins" in refused.stderr
    assert UserLimit.objects.count() == 2
    done = allot(owner, "unset", "team-a", "-u", "bob")
    assert done.returncode == 0, done.stderr
    assert list(UserLimit.objects.values_list("user", flat=True)) == [None]
    assert allot(owner, "unset", "team-a", "-u", "bob").returncode != 0
