"""The `allot` command as a researcher types it, run as a subprocess against a live portal."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from portal.tenancy.services import issue_token

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def allot(live_server, cluster_admin, tmp_path):
    """`allot(*args)` -> CompletedProcess, as the cluster admin with the TR-4858 cluster."""
    call_command("bootstrap", verbosity=0)
    token = issue_token(cluster_admin, "test")[1]
    env = dict(os.environ, ALLOT_URL=live_server.url, ALLOT_TOKEN=token,
               ALLOT_CONFIG=str(tmp_path / "config.json"), COLUMNS="200")  # fmt: skip

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)  # fmt: skip

    run.env = env
    return run


def settle():
    from portal.scheduling.settle import settle as run_cycles

    run_cycles()


def test_a_researcher_submits_lists_gets_logs_and_deletes(allot):
    assert allot("project", "set", "team-a").returncode == 0
    done = allot("submit", "train-1", "-i", "gcr.io/run-ai-demo/quickstart", "-g", "1")
    assert done.returncode == 0, done.stderr
    done = allot("submit", "nb-1", "-i", "jupyter/base-notebook", "-g", "0.5", "--interactive",
                 "--service-type=ingress", "--port", "8888")  # fmt: skip
    assert done.returncode == 0, done.stderr
    settle()
    settle()
    listed = allot("list")
    assert listed.returncode == 0, listed.stderr
    rows = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:] if line}
    assert rows["train-1"] == "Running" and rows["nb-1"] == "Running", listed.stdout
    jobs = json.loads(allot("list", "--json").stdout)
    assert {j["name"] for j in jobs} == {"train-1", "nb-1"}
    got = allot("get", "train-1")
    assert "STATUS: Running" in got.stdout and "submitted" in got.stdout, got.stdout
    assert json.loads(allot("get", "train-1", "--json").stdout)["events"]
    logs = allot("logs", "train-1")
    assert logs.returncode == 0 and logs.stdout.strip(), logs.stderr
    deleted = allot("delete", "train-1", "nb-1")
    assert deleted.returncode == 0 and deleted.stdout.count("has been deleted") == 2
    assert json.loads(allot("list", "--json").stdout) == []


def test_problems_are_named_plainly_without_a_traceback(allot):
    missing = allot("get", "ghost", "-p", "team-a")
    assert missing.returncode == 1
    assert "not found" in missing.stderr and "Traceback" not in missing.stderr
    negative = allot("submit", "bad", "-p", "team-a", "-g", "-1")
    assert negative.returncode == 1
    assert "gpus" in negative.stderr and "Traceback" not in negative.stderr
    usage = allot("submit")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr


def test_an_unreachable_portal_is_named(allot):
    env = dict(allot.env, ALLOT_URL="http://127.0.0.1:9")
    done = subprocess.run([sys.executable, "-m", "cli", "list", "-A"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1
    assert "cannot reach http://127.0.0.1:9" in done.stderr and "Traceback" not in done.stderr


def test_login_stores_url_and_token_readable_by_the_owner_only(allot, tmp_path, live_server):
    env = {k: v for k, v in allot.env.items() if k not in ("ALLOT_URL", "ALLOT_TOKEN")}
    token = allot.env["ALLOT_TOKEN"]
    done = subprocess.run(
        [sys.executable, "-m", "cli", "login", live_server.url, "--token", token],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    path = tmp_path / "config.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["url"] == live_server.url


def test_a_sweep_from_a_file_is_submitted_at_once_and_its_errors_name_the_job(allot, tmp_path):
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(
        "jobs:\n"
        + "".join(f"  - {{name: lr-{i}, gpus: 1, image: python:3.11}}\n" for i in range(12))
        + "  - {name: big, project: team-b, gpus: 0.5}\n"
    )
    assert allot("project", "set", "team-a").returncode == 0
    done = allot("submit", "--from", str(sweep))
    assert done.returncode == 0, done.stderr
    assert "13 jobs have been submitted successfully (Pending)." in done.stdout
    names = {(j["project"], j["name"]) for j in json.loads(allot("list", "-A", "--json").stdout)}
    assert ("team-a", "lr-11") in names and ("team-b", "big") in names
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"name": "ok-1"}, {"name": "bad-2", "gpus": -1}]))
    failed = allot("submit", "--from", str(bad))
    assert failed.returncode == 1
    assert "no job of this batch was submitted" in failed.stderr
    assert "job 1 (bad-2): gpus: must be greater than 0" in failed.stderr
    assert "Traceback" not in failed.stderr
    both = allot("submit", "one", "--from", str(bad))
    assert both.returncode == 2 and "not both" in both.stderr
