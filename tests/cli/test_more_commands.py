"""login with a password, bash, top, submit --wait and the submit flags, as subprocesses against a
live portal."""

from __future__ import annotations

import json
import re
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from portal.jobs.models import Job, Status
from portal.jobs.services import record_event
from portal.tenancy.models import ApiToken, Membership, Project, token_digest
from portal.tenancy.services import issue_token
from tests.cli.test_allot_command import ROOT, allot, settle  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)


def run(env: dict, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    """`allot *args` with `env` (and `stdin`), as a subprocess."""
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60)  # fmt: skip


def logged_out(env: dict) -> dict:
    """`env` without ALLOT_URL and ALLOT_TOKEN: only the config file tells the CLI."""
    return {k: v for k, v in env.items() if k not in ("ALLOT_URL", "ALLOT_TOKEN")}


class Cycles:
    """Scheduling cycles in a background thread while a command runs (`with Cycles():`)."""

    def __init__(self):
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self):
        try:
            while not self.stop.is_set():
                settle()
                time.sleep(0.3)
        finally:
            connection.close()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(20)


# --- login ---------------------------------------------------------------------------------------


def test_login_with_a_password_stores_the_token_not_the_password(allot, live_server, tmp_path):  # noqa: F811
    env = logged_out(allot.env)
    assert run(env, "list", "-A").returncode == 1  # nothing configured yet
    done = run(env, "login", live_server.url, "-u", "root", "--password-stdin",
               stdin="x-test-password-1\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"Logged in to {live_server.url} as root" in done.stdout
    path = tmp_path / "config.json"
    stored = json.loads(path.read_text())
    assert set(stored) == {"url", "token"} and stored["url"] == live_server.url
    assert stored["token"] != allot.env["ALLOT_TOKEN"]  # a new token per login, named for it
    made = ApiToken.objects.get(digest=token_digest(stored["token"]))
    assert made.name == f"allot CLI on {socket.gethostname()}" and made.user.username == "root"
    assert "x-test-password-1" not in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    listed = run(env, "project", "list")
    assert listed.returncode == 0 and "team-a" in listed.stdout, listed.stderr


def test_logout_revokes_the_stored_token_and_forgets_it(allot, live_server, tmp_path):  # noqa: F811
    env = logged_out(allot.env)
    run(env, "login", live_server.url, "-u", "root", "--password-stdin",
        stdin="x-test-password-1\n")  # fmt: skip
    path = tmp_path / "config.json"
    key = json.loads(path.read_text())["token"]
    done = run(env, "logout")
    assert done.returncode == 0 and "the token is revoked and forgotten" in done.stdout, done.stderr
    assert json.loads(path.read_text()) == {"url": live_server.url}
    token = ApiToken.objects.get(digest=token_digest(key))
    assert token.revoked_reason == "revoked by its owner"
    assert ApiToken.objects.get(digest=token_digest(allot.env["ALLOT_TOKEN"])).revoked_at is None
    refused = run(dict(env, ALLOT_TOKEN=key), "list", "-A")  # the portal says why
    assert refused.returncode == 1
    assert "Token revoked (revoked by its owner): sign in again." in refused.stderr
    assert "run `allot login URL`" in refused.stderr
    again = run(dict(env, ALLOT_TOKEN=key), "logout")
    assert again.returncode == 0 and "not valid any more" in again.stdout


def test_login_prompts_for_the_username_when_not_given(allot, live_server, tmp_path):  # noqa: F811
    env = logged_out(allot.env)
    done = run(env, "login", live_server.url, "--password-stdin",
               stdin="root\nx-test-password-1\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Username" in done.stdout and "as root" in done.stdout
    stored = json.loads((tmp_path / "config.json").read_text())["token"]
    assert ApiToken.objects.get(digest=token_digest(stored)).user.username == "root"


def test_a_wrong_password_is_said_plainly_and_nothing_is_stored(allot, live_server, tmp_path):  # noqa: F811
    env = logged_out(allot.env)
    done = run(env, "login", live_server.url, "-u", "root", "--password-stdin", stdin="nope\n")
    assert done.returncode == 1
    assert "wrong username or password" in done.stderr
    assert "not logged in" not in done.stderr  # the hint for a refused token, not a password
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "config.json").exists()
    both = run(env, "login", live_server.url, "--token", "x", "-u", "root")
    assert both.returncode == 2 and "not both" in both.stderr


# --- bash ----------------------------------------------------------------------------------------


def test_bash_says_why_there_is_no_shell(allot):  # noqa: F811
    assert allot("submit", "shelly", "-p", "team-a", "-g", "1").returncode == 0
    pending = allot("bash", "shelly", "-p", "team-a")
    assert pending.returncode == 1
    assert "status: job team-a/shelly is Pending; a shell needs a Running job" in pending.stderr
    settle()
    simulated = allot("bash", "shelly", "-p", "team-a")
    assert simulated.returncode == 1 and "simulated cluster" in simulated.stderr
    assert simulated.stderr.startswith("Error: job team-a/shelly runs on the simulated")
    assert "Traceback" not in simulated.stderr
    missing = allot("bash", "ghost", "-p", "team-a")
    assert missing.returncode == 1 and "not found" in missing.stderr


def test_bash_is_refused_to_a_viewer(allot):  # noqa: F811
    allot("submit", "shelly", "-p", "team-a", "-g", "1")
    settle()
    vera = get_user_model().objects.create_user("vera", password="x-test-password-1")
    Membership.objects.create(user=vera, project=Project.objects.get(name="team-a"),
                              role="viewer")  # fmt: skip
    env = dict(allot.env, ALLOT_TOKEN=issue_token(vera, "test")[1])
    refused = run(env, "bash", "shelly", "-p", "team-a")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "Only the job's owner and the project's admins may change it." in refused.stderr


def test_bash_says_plainly_when_the_portal_cannot_open_the_websocket(allot, monkeypatch):  # noqa: F811
    """The portal offers the shell (its agent opens shells, as the Kubernetes agent does) but this
    test's live server speaks plain HTTP only (no websockets): the CLI says the portal refused,
    without a traceback. The relay itself is tested in tests/portal/web/test_job_shell.py."""
    from portal.scheduling.agent import get_agent

    allot("submit", "shelly", "-p", "team-a", "-g", "1")
    settle()
    monkeypatch.setattr(get_agent(), "supports_shell", True)  # the portal answers 200 now
    done = allot("bash", "shelly", "-p", "team-a")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "the portal refused the shell (HTTP 404)" in done.stderr


# --- top -----------------------------------------------------------------------------------------


def test_top_shows_the_tiles_and_projects_and_parses_as_json(allot):  # noqa: F811
    assert allot("submit", "t1", "-p", "team-b", "-g", "3").returncode == 0
    # the whole cluster (2 x 8), 3 GPUs of it taken: waits (a job larger than the cluster is a 400)
    assert allot("submit", "t2", "-p", "team-b", "-g", "8", "--pods", "2").returncode == 0
    settle()
    shown = allot("top")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("NODES 2/2 ready   GPUs 3/16 allocated, 13 free (16 ready)")
    assert "RUNNING 1   PENDING 1" in lines[0] and "(simulated cluster)" in lines[0]
    assert lines[0].endswith("CPU 0/160 cores, MEMORY 0/1024 GiB")  # two DGX-1 (issue 26)
    assert lines[2].split() == ["PROJECT", "QUOTA", "FAIR-SHARE", "ALLOCATED", "RUNNING",
                                "PENDING", "UTIL"]  # fmt: skip
    rows = {line.split()[0]: line for line in lines[3:] if line.strip()}
    assert set(rows) == {"team-a", "team-b", "team-c", "team-d"}
    assert re.match(r"team-b\s+2\s+[\d.]+\s+3 \(\+1 over quota\)\s+1\s+1\s+\S", rows["team-b"])
    assert re.match(r"team-a\s+4\s+[\d.]+\s+0\s+0\s+0\s+\S", rows["team-a"])
    overview = json.loads(allot("top", "--json").stdout)
    assert overview["cluster"]["allocated_gpus"] == 3 and overview["simulated"] is True
    team_b = next(p for p in overview["projects"] if p["name"] == "team-b")
    util = rows["team-b"].split()[-2:]
    if team_b["utilization"] is None:
        assert util[-1] == "-"
    else:
        assert util == [f"{round(team_b['utilization'] * 100)}%", "sim"]


def test_top_marks_simulated_utilization_sim(allot, settings):  # noqa: F811
    settings.ALLOT_USAGE_SAMPLE_INTERVAL_S = 0  # a usage sample every cycle
    allot("submit", "t1", "-p", "team-a", "-g", "2")
    settle()
    team_a = next(p for p in json.loads(allot("top", "--json").stdout)["projects"]
                  if p["name"] == "team-a")  # fmt: skip
    assert team_a["utilization"] is not None and team_a["utilization_simulated"] is True
    row = next(line for line in allot("top").stdout.splitlines() if line.startswith("team-a"))
    assert row.split()[-2:] == [f"{round(team_a['utilization'] * 100)}%", "sim"], row


# --- submit --wait and the submit flags ----------------------------------------------------------


def test_submit_wait_returns_once_the_job_runs(allot):  # noqa: F811
    with Cycles():
        done = allot("submit", "w1", "-p", "team-a", "-g", "1", "--wait", "--timeout", "30")
    assert done.returncode == 0, done.stderr
    assert "is Running on dgx1-" in done.stdout


def test_submit_wait_gives_up_saying_why_the_job_waits(allot):  # noqa: F811
    assert allot("submit", "small", "-p", "team-a", "-g", "1").returncode == 0
    settle()  # one GPU taken: a gang of the whole cluster (2 x 8) waits
    with Cycles():
        done = allot("submit", "big", "-p", "team-a", "-g", "8", "--pods", "2", "--wait",
                     "--timeout", "3")  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr
    reason = Job.objects.get(name="big").pending_reason
    assert reason, "the scheduler gave no reason"
    assert f"job team-a/big is still Pending after 3 s: {reason}" in done.stderr


def test_submit_of_a_pod_larger_than_every_node_warns_and_the_job_waits(allot):  # noqa: F811
    """Issue 24 item 10: accepted with a warning, not refused; `allot get` says what it waits
    for once the ETA refresh ran."""
    done = allot("submit", "nine", "-p", "team-a", "-g", "9")
    assert done.returncode == 0, done.stderr
    assert "has been submitted successfully (Pending)" in done.stdout
    assert (
        "Warning: no node has 9 GPUs today (the largest has 8): the job waits until one joins"
        in (done.stderr)
    )
    from portal.scheduling import eta

    settle()
    eta.refresh()
    shown = allot("get", "nine", "-p", "team-a")
    assert "cannot start until a node with 9 GPUs joins" in shown.stdout, shown.stdout


def test_submit_wait_stops_with_the_reason_when_the_job_fails(allot):  # noqa: F811
    def fail_soon():
        try:
            while not Job.objects.filter(name="doomed").exists():
                time.sleep(0.1)
            time.sleep(1)
            job = Job.objects.get(name="doomed")
            job.status = Status.FAILED  # as the agent's observation would record it
            job.save(update_fields=["status"])
            record_event(job, "failed", "failed on dgx1-1: image not found (test)")
        finally:
            connection.close()

    failer = threading.Thread(target=fail_soon, daemon=True)
    failer.start()
    done = allot("submit", "doomed", "-p", "team-a", "-g", "8", "--pods", "2", "--wait",
                 "--timeout", "30")  # fmt: skip
    failer.join(20)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "job team-a/doomed is Failed and never seen Running" in done.stderr
    assert "image not found (test)" in done.stderr


def test_submit_passes_every_runai_flag_through(allot):  # noqa: F811
    done = allot("submit", "nb", "-i", "jupyter/base-notebook", "-g", "0.5", "--interactive",
                 "--pvc", "test:/tmp/pvc1mount", "--pvc", "data:/data:ro", "-e", "SEED=1",
                 "-e", "MODE=a=b", "--command", "python", "--args", "train.py", "--args", "-v",
                 "--port", "8888", "--service-type=ingress", "--priority", "3",
                 "-p", "team-a")  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = json.loads(allot("get", "nb", "-p", "team-a", "--json").stdout)
    assert job["volumes"] == [
        {"pvc": "test", "mount_path": "/tmp/pvc1mount", "read_only": False},
        {"pvc": "data", "mount_path": "/data", "read_only": True},
    ]
    assert job["environment"] == {"SEED": "1", "MODE": "a=b"}
    assert (job["command"], job["args"]) == (["python"], ["train.py", "-v"])
    assert (job["type"], job["gpus"], job["priority"]) == ("interactive", 0.5, 3)
    bad = allot("submit", "x", "-p", "team-a", "--pvc", "nocolon")
    assert bad.returncode == 2 and "CLAIM:PATH" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize(("given", "seconds"), [("5400", 5400), ("90m", 5400), ("2h", 7200),
                                                ("1d", 86400), ("45s", 45)])  # fmt: skip
def test_submit_estimate_takes_a_duration_with_a_unit(allot, given, seconds):  # noqa: F811
    done = allot("submit", "est", "-p", "team-a", "--estimate", given)
    assert done.returncode == 0, done.stderr
    assert json.loads(allot("get", "est", "-p", "team-a", "--json").stdout)["estimate_s"] == seconds


@pytest.mark.parametrize("given", ["soon", "0", "2w", "1.5h", "-3h"])
def test_submit_estimate_refuses_what_is_not_a_duration(allot, given):  # noqa: F811
    bad = allot("submit", "est", "-p", "team-a", "--estimate", given)
    assert bad.returncode == 2 and "not a duration such as" in bad.stderr, bad.stderr
    assert "Traceback" not in bad.stderr


def test_get_shows_a_pending_jobs_expected_start_and_predicted_run_time(allot):  # noqa: F811
    from portal.scheduling import eta

    allot("submit", "fill", "-p", "team-d", "-g", "8", "--pods", "2")  # the whole cluster
    settle()
    allot("submit", "after", "-p", "team-d", "-g", "1")  # waits in its own project's queue
    settle()
    eta.refresh()
    before = timezone.now()
    shown = allot("get", "after", "-p", "team-d").stdout
    after = timezone.now()
    assert "EXPECTED START: " in shown and "PREDICTED RUN TIME: 1h00m (default)" in shown
    job = Job.objects.get(name="after")
    assert job.eta is not None
    day = "" if job.eta.date() == after.date() else f"{job.eta:%d %b} "  # after 23:00
    found = re.search(rf"EXPECTED START: {day}{job.eta:%H:%M} UTC \(in (?:(\d+) h )?(\d+) min\), "
                      "from the predicted run times of the jobs it waits for", shown)  # fmt: skip
    assert found, shown
    # the minutes left when the CLI asked, however slow the machine was between the steps
    shown_min = int(found[1] or 0) * 60 + int(found[2])
    left = [(job.eta - moment).total_seconds() / 60 for moment in (after, before)]
    assert int(left[0]) - 1 <= shown_min <= int(left[1]) + 1 <= 61, (shown_min, left)


def test_describe_shows_a_job_its_runs_and_events_as_runai_describe_does(allot):  # noqa: F811
    """Issue 34 item 13: `allot describe job NAME` (and `allot describe NAME`)."""
    assert allot("project", "set", "team-a").returncode == 0
    assert allot("submit", "d-1", "-i", "pytorch/pytorch", "-g", "1").returncode == 0
    settle()
    settle()
    shown = allot("describe", "job", "d-1")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    for label in ("Name:", "Project:", "Status:", "GPUs:", "Node(s):", "URL(s):", "Runs:",
                  "Events:"):  # fmt: skip
        assert label in out, label
    assert re.search(r"^Status:\s+(Running|ContainerCreating)", out, re.M), out
    run_line = out.split("Runs:")[1].split("Events:")[0]
    assert re.search(r"^1\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", run_line.strip(), re.M), run_line
    assert "started on" in out.split("Events:")[1] or "scheduled" in out.split("Events:")[1]
    assert allot("describe", "d-1").stdout.split("Runs:")[0] == out.split("Runs:")[0]
    wrong = allot("describe", "node", "d-1")
    assert wrong.returncode == 1 and "knows jobs only" in wrong.stderr
    as_json = json.loads(allot("describe", "d-1", "--json").stdout)
    assert as_json["runs"][0]["number"] == 1 and as_json["events"]


def test_submit_takes_the_command_after_a_double_dash_word_for_word(allot):  # noqa: F811
    done = allot("submit", "ddp", "--pods", "2", "-p", "team-a", "--", "torchrun", "--nnodes",
                 "2", "--nproc-per-node", "1", "train.py", "--note", "two words")  # fmt: skip
    assert done.returncode == 0, done.stderr
    job = json.loads(allot("get", "ddp", "-p", "team-a", "--json").stdout)
    assert job["pods"] == 2
    assert job["command"] == ["torchrun", "--nnodes", "2", "--nproc-per-node", "1", "train.py",
                              "--note", "two words"]  # fmt: skip
    assert job["args"] == []
    done = allot("submit", "ddp2", "-p", "team-a", "--command", "python", "--", "train.py", "-v")
    assert done.returncode == 0, done.stderr
    job = json.loads(allot("get", "ddp2", "-p", "team-a", "--json").stdout)
    assert (job["command"], job["args"]) == (["python"], ["train.py", "-v"])  # Run:AI's form
    both = allot("submit", "x", "-p", "team-a", "--args", "a", "--", "python", "b")
    assert both.returncode == 2 and "not both" in both.stderr
