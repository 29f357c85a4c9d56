"""`allot usage` shows core-hours and memory GiB-hours beside GPU-hours when runs held CPU or
memory (issue 26), as the API counts them; the scripted week without them keeps its columns
(tests/cli/test_usage_command.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT
from tests.cli.test_usage_command import table
from tests.portal.dashboards.accounting_week import UNTIL
from tests.portal.dashboards.test_accounting_cpu_memory import (
    CORE_HOURS,
    GIB_HOURS,
    with_cpu_and_memory,
)

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_prints_core_and_gib_hours_per_project(live_server, tmp_path):
    root = with_cpu_and_memory()["root"]
    env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=issue_token(root, "test")[1],
               ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "cli", "usage", "--since", "2026-11-16", "--until", UNTIL],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    head = done.stdout.splitlines()[1].split()
    assert head[-3:] == ["CORE-h", "MEMORY", "GiB-h"]
    rows = table(done.stdout)
    assert {name: rows[name][-2:] for name in CORE_HOURS} == {
        name: [f"{CORE_HOURS[name]:.2f}", f"{GIB_HOURS[name]:.2f}"] for name in CORE_HOURS
    }
    assert rows["TOTAL"][-2:] == [f"{sum(CORE_HOURS.values()):.2f}",
                                  f"{sum(GIB_HOURS.values()):.2f}"]  # fmt: skip
