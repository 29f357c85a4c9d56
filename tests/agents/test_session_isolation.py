"""Issue 22: a notebook reads nothing of the portal's, nor another session's.

The reproduction of the issue, in a real kernel: a researcher's JupyterLab is started the way the
simulated agent starts it, by a "portal" (this test process) whose environment holds its
secrets; code sent to the kernel over Jupyter's websocket tries every read the issue made, and
each must fail. Then the pieces one by one: the refusal of a portal that is not root, the
minimal environment, the files' modes, and a stop that leaves nothing of the session's user.
"""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import textwrap
import time
import urllib.request
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psycopg
import pytest
import websocket

from agents import firewall
from agents import sessions as sessions_module
from agents.base import JobSpec, PodSpec
from agents.sessions import (
    SERVER_CONFIG,
    LocalSessions,
    SessionNotStarted,
    session_environment,
    session_user,
)
from agents.simulated import SimulatedAgent
from tests.paths import ROOT

# The portal's PostgreSQL and Redis, which trust local connections here as on many hosts
GUARDED = ["postgres://postgres@127.0.0.1:5432/allot", "redis://127.0.0.1:6379/0"]
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="sessions get users of their own as root")

# What the portal holds: none of it may reach a notebook.
CANARIES = {
    "SECRET_KEY": "canary-secret-key-6d1f0c",
    "DATABASE_URL": "postgres://allot:canary-db-password@127.0.0.1:5432/allot",
    "REDIS_URL": "redis://:canary-redis-password@127.0.0.1:6379/0",
    "ALLOT_TOKEN": "canary-api-token-93b2e7",
    "EMAIL_HOST_PASSWORD": "canary-mail-password",
}


def wait(predicate, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def notebook_job(project: str, name: str = "nb", **fields) -> JobSpec:
    return JobSpec(project, name, (PodSpec("dgx1-1", (0,), 0.5),), datetime.now(UTC),
                   type="interactive", gpus=0.5, ports=(8888,), **fields)  # fmt: skip


@pytest.fixture
def portal(tmp_path_factory, sessions_dir, monkeypatch):
    """A portal's files as `make run` leaves them today (umask 022): var/ with the SQLite database,
    .env beside it, sessions in var/sessions; and its secrets in this process's environment."""
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    sessions_dir.chmod(0o711)  # (as /srv or /work would be)
    root = sessions_dir / "portal"
    var = root / "var"
    var.mkdir(parents=True)
    root.chmod(0o755)
    var.chmod(0o755)
    database = var / "allot.sqlite3"
    database.write_text("SQLite format 3 canary-sqlite-row")
    database.chmod(0o644)
    env_file = root / ".env"
    env_file.write_text(f"SECRET_KEY={CANARIES['SECRET_KEY']}\n")
    env_file.chmod(0o644)
    return {"root": root, "var": var, "database": database, "env": env_file,
            "sessions": var / "sessions"}  # fmt: skip


def run_in_kernel(session, code: str, timeout: float = 90.0) -> str:
    """Start a kernel over the server's REST API, run `code` in it over the kernel websocket,
    and return what it printed (an error in the kernel fails the test)."""
    auth = {"Authorization": f"token {session.token}"}
    request = urllib.request.Request(
        f"{session.upstream}api/kernels", data=b"{}", method="POST",
        headers={**auth, "Content-Type": "application/json"},
    )  # fmt: skip
    with urllib.request.urlopen(request, timeout=60) as response:
        kernel = json.load(response)["id"]
    channels = f"ws://{session.host}:{session.port}{session.base_url}api/kernels/{kernel}/channels"
    ws = websocket.create_connection(channels, header=[f"Authorization: token {session.token}"],
                                     timeout=timeout)  # fmt: skip
    msg_id = uuid.uuid4().hex
    ws.send(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex,
                   "msg_type": "execute_request", "version": "5.3",
                   "date": datetime.now(UTC).isoformat()},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))  # fmt: skip
    printed = []
    try:
        while True:
            message = json.loads(ws.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                printed.append(content["text"])
            elif kind == "error":
                raise AssertionError("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(printed)
    finally:
        ws.close()


PROBE = """
import json, os, sqlite3, urllib.request

results = {}

def attempt(label, action):
    try:
        value = action()
    except Exception as exc:
        results[label] = "denied: " + type(exc).__name__
    else:
        results[label] = "READ: " + repr(value)[:300]

def read(path):
    with open(path, "rb") as file:
        return file.read(300)

for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL", "ALLOT_TOKEN", "EMAIL_HOST_PASSWORD"):
    attempt("environment " + name, lambda name=name: os.environ[name])

def environment_canaries():
    found = [value for value in os.environ.values() if "canary" in value]
    if found:
        return found
    raise LookupError("no canary")

attempt("a canary anywhere in the environment", environment_canaries)

def postgres_as_the_portal():
    url = os.environ["DATABASE_URL"]
    import psycopg
    return psycopg.connect(url, connect_timeout=3).info.dbname

def redis_as_the_portal():
    url = os.environ["REDIS_URL"]
    import redis
    return redis.Redis.from_url(url, socket_timeout=3).ping()

attempt("PostgreSQL as the portal connects", postgres_as_the_portal)
attempt("Redis as the portal connects", redis_as_the_portal)

def postgres_trusting_localhost():  # a Debian cluster trusting 127.0.0.1, as CI's does
    import psycopg
    url = f"postgresql://postgres@127.0.0.1:{P['postgres_port']}/postgres"
    return psycopg.connect(url, connect_timeout=3).info.dbname

def redis_without_password():  # Redis's protocol by hand: the kernel need not have a client
    import socket
    with socket.create_connection(("127.0.0.1", P["redis_port"]), timeout=3) as connection:
        connection.sendall(b"PING\\r\\n")
        return connection.recv(100)

attempt("PostgreSQL on this host, no password", postgres_trusting_localhost)
attempt("Redis on this host, no password", redis_without_password)

def sqlite_rows(path):
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True).execute("select 1").fetchall()

attempt("the portal's SQLite file", lambda: read(P["database"]))
attempt("the portal's SQLite database", lambda: sqlite_rows(P["database"]))
attempt("the portal's .env", lambda: read(P["env"]))
attempt("the portal's var/ listed", lambda: os.listdir(P["var"]))
attempt("the sessions directory listed", lambda: os.listdir(P["sessions"]))
attempt("this session's own description (its token)", lambda: read(P["own_json"]))
attempt("another session's description (its token)", lambda: read(P["other_json"]))
attempt("another session's log", lambda: read(P["other_log"]))
attempt("another session's home listed", lambda: os.listdir(P["other_home"]))
attempt("another session's notebook", lambda: read(P["other_notebook"]))
attempt("another session's Jupyter config", lambda: os.listdir(P["other_home"] + "/.jupyter"))
attempt("another session's kernel keys", lambda: os.listdir(P["other_home"] + "/.runtime"))
for what, pid in (("the portal", P["portal_pid"]), ("another session", P["other_pid"])):
    attempt(f"/proc environ of {what}", lambda pid=pid: read(f"/proc/{pid}/environ"))
    attempt(f"/proc cwd of {what}", lambda pid=pid: os.listdir(f"/proc/{pid}/cwd"))
    attempt(f"/proc fds of {what}", lambda pid=pid: os.listdir(f"/proc/{pid}/fd"))
    attempt(f"/proc memory maps of {what}", lambda pid=pid: read(f"/proc/{pid}/maps"))

def other_jupyter(token):
    request = urllib.request.Request(P["other_api"] + "api/contents",
                                     headers={"Authorization": "token " + token})
    return urllib.request.urlopen(request, timeout=5).read(300)

attempt("another session's Jupyter with this session's token",
        lambda: other_jupyter(os.environ["JUPYTER_TOKEN"]))
attempt("another session's Jupyter without a token", lambda: other_jupyter(""))

results["whoami"] = {"uid": os.getuid(), "gid": os.getgid(), "groups": os.getgroups(),
                     "cwd": os.getcwd(), "umask": oct(os.umask(0o077)), "answer": 6 * 7}
print(json.dumps(results))
"""


@as_root
@pytest.mark.slow
def test_a_notebook_reads_nothing_of_the_portal_or_of_another_session(portal, session_python):
    """The issue's reproduction in a real kernel: every read fails."""
    private = (portal["var"], portal["env"], portal["database"])
    sessions = LocalSessions(portal["sessions"], python=session_python, private=private,
                             guarded=GUARDED)  # fmt: skip
    agent = SimulatedAgent(sessions=sessions)
    mine, other = notebook_job("team-a", environment=(("SEED", "42"),)), notebook_job("team-b")
    agent.start(mine)
    agent.start(other)
    assert wait(lambda: sessions.ready("team-a", "nb") and sessions.ready("team-b", "nb"))
    a, b = sessions.get("team-a", "nb"), sessions.get("team-b", "nb")

    # team-b's researcher writes a notebook; team-a's sees its own job's environment only
    notebook = (
        "import os; open(os.environ['HOME'] + '/work/b.ipynb', 'w').write('canary-b-notebook')"
    )
    run_in_kernel(b, notebook)
    assert run_in_kernel(a, "import os; print(os.environ['SEED'])").strip() == "42"

    b_home = portal["sessions"] / "team-b.nb"
    paths = {
        "database": str(portal["database"]), "env": str(portal["env"]),
        "var": str(portal["var"]), "sessions": str(portal["sessions"]),
        "own_json": str(portal["sessions"] / "team-a.nb.json"),
        "other_json": str(portal["sessions"] / "team-b.nb.json"),
        "other_log": str(portal["sessions"] / "team-b.nb.log"),
        "other_home": str(b_home), "other_notebook": str(b_home / "work" / "b.ipynb"),
        "portal_pid": os.getpid(), "other_pid": b.pid, "other_api": b.upstream,
        "postgres_port": 5432, "redis_port": 6379,
    }  # fmt: skip
    printed = run_in_kernel(a, f"P = {paths!r}\n" + textwrap.dedent(PROBE))
    results = json.loads(printed.strip().splitlines()[-1])

    whoami = results.pop("whoami")
    print(json.dumps(results, indent=1))
    read = {label: outcome for label, outcome in results.items() if "denied" not in outcome}
    assert read == {}, "the notebook read what it must not"
    assert len(results) == 32
    expected = dict.fromkeys(results, "PermissionError")  # the kernel's own "no"
    expected.update({label: "KeyError" for label in results if label.startswith("environment")})
    expected.update({  # no credentials to try; no file to open; no token to show
        "a canary anywhere in the environment": "LookupError",
        "PostgreSQL as the portal connects": "KeyError",
        "Redis as the portal connects": "KeyError",
        "the portal's SQLite database": "OperationalError",
        "PostgreSQL on this host, no password": "OperationalError",  # reset by the firewall
        "Redis on this host, no password": "ConnectionRefusedError",
        "another session's Jupyter with this session's token": "HTTPError",
        "another session's Jupyter without a token": "HTTPError",
    })  # fmt: skip
    assert results == {label: f"denied: {error}" for label, error in expected.items()}
    for path in paths.values():  # each file it tried is there: the denials are not "no such file"
        assert not isinstance(path, str) or path.startswith("http") or Path(path).exists(), path
    assert not any(secret in printed for secret in CANARIES.values())
    assert whoami["answer"] == 42  # a real kernel ran the probe
    account = pwd.getpwnam(session_user("team-a", "nb"))
    assert (whoami["uid"], whoami["gid"]) == (account.pw_uid, account.pw_gid)
    assert whoami["groups"] in ([], [account.pw_gid])  # its own group, no other
    assert whoami["uid"] not in (0, os.getuid(), pwd.getpwnam(session_user("team-b", "nb")).pw_uid)
    assert whoami["cwd"].startswith(str(portal["sessions"] / "team-a.nb"))
    assert whoami["umask"] == "0o77"
    assert "canary-b-notebook" not in printed and b.token not in printed

    # the portal's files were closed before the first session started
    assert stat.S_IMODE(portal["var"].stat().st_mode) == 0o711  # the way to the sessions only
    assert stat.S_IMODE(portal["database"].stat().st_mode) == 0o600
    assert stat.S_IMODE(portal["env"].stat().st_mode) == 0o600

    agent.stop("team-a", "nb")
    agent.stop("team-b", "nb")
    assert psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres").info.dbname  # the
    # test's own process still reaches PostgreSQL: the refusals were the sessions' group's only
    firewall.remove()


@as_root
def test_a_firewall_that_cannot_be_installed_is_a_refusal(sessions_dir, monkeypatch):
    """No iptables (or no CAP_NET_ADMIN): no server starts, and the job says why and what to
    change."""

    def refuse(targets, gid):
        raise firewall.FirewallError("iptables is not installed, so notebooks could reach ...")

    monkeypatch.setattr(firewall, "guard", refuse)
    sessions = LocalSessions(sessions_dir / "s", python="/bin/sh", guarded=GUARDED)
    with pytest.raises(SessionNotStarted, match="database and broker could not be closed"):
        sessions.start("t", "nb")
    assert "iptables is not installed" in sessions.failure("t", "nb")
    assert sessions.get("t", "nb") is None


def test_the_guard_covers_the_portals_database_and_broker(settings):
    """The factory hands the sessions DATABASE_URL's and REDIS_URL's addresses, and nothing
    when the operator turned the guard off."""
    from portal.scheduling.agent import _build_agent

    settings.ALLOT_SIM_JUPYTER = True
    settings.ALLOT_SESSIONS_FIREWALL = True
    settings.ALLOT_SESSIONS_GUARDED_URLS = GUARDED
    assert _build_agent("simulated").sessions.guarded == [("127.0.0.1", 5432), ("127.0.0.1", 6379)]
    settings.ALLOT_SESSIONS_FIREWALL = False
    assert _build_agent("simulated").sessions.guarded is None


def test_a_portal_that_is_not_root_refuses_to_run_a_notebook_as_itself(sessions_dir, monkeypatch):
    """Not root and not the embedded single-user trial: no server starts, and the job fails
    saying why and what to change."""
    monkeypatch.setattr(sessions_module.os, "geteuid", lambda: 1000)
    sessions = LocalSessions(sessions_dir)
    agent = SimulatedAgent(sessions=sessions)
    job = notebook_job("team-a")
    agent.start(job)  # no exception: the refusal is the job's failure
    assert sessions.get("team-a", "nb") is None
    assert not list(sessions_dir.glob("*.json"))
    status = agent.status(job)
    assert status.phase == "Failed"
    assert status.message.startswith("Jupyter was not started: refusing to run a researcher's "
                                     "notebook as the portal's own user")  # fmt: skip
    for hint in ("root", "ALLOT_SIM_JUPYTER=0", "ALLOT_AGENT=kubernetes", "make run",
                 "ALLOT_SESSIONS_SINGLE_USER=1"):  # fmt: skip
        assert hint in status.message
    with pytest.raises(SessionNotStarted, match="portal's own user"):
        sessions.start("team-a", "nb")
    agent.stop("team-a", "nb")
    assert sessions.failure("team-a", "nb") is None


@as_root
def test_a_real_unprivileged_portal_process_refuses_too(sessions_dir, session_python):
    """The same refusal from a process that really is not root (nobody)."""
    sessions_dir.chmod(0o777)
    code = textwrap.dedent(f"""
        from agents.sessions import LocalSessions, SessionNotStarted
        try:
            LocalSessions({str(sessions_dir / "s")!r}, python={session_python!r}).start("t", "nb")
        except SessionNotStarted as exc:
            print("refused:", exc)
    """)
    nobody = pwd.getpwnam("nobody")
    done = subprocess.run(
        [session_python, "-c", code], cwd=ROOT, user=nobody.pw_uid, group=nobody.pw_gid,
        extra_groups=[], capture_output=True, text=True, timeout=60,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.stdout.startswith("refused: refusing to run a researcher's notebook as the "
                                  "portal's own user (nobody, uid"), done.stderr  # fmt: skip


def test_the_embedded_trial_runs_notebooks_as_its_user_with_nothing_of_its_environment(
    sessions_dir, monkeypatch
):
    """`make run` (single_user): the portal's own user, but a minimal environment, a 0700
    directory, a 0700 home and 0600 files."""
    for name, value in CANARIES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(LocalSessions, "isolated", property(lambda self: False))  # not root
    dump = (sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))")
    sessions = LocalSessions(sessions_dir / "s", command=dump, single_user=True)
    session = sessions.start("team-a", "nb", (("SEED", "42"),))
    assert wait(lambda: sessions.get("team-a", "nb") is None, 30)  # printed and exited
    log = (sessions_dir / "s" / "team-a.nb.log").read_text()
    environment = json.loads(log.strip().splitlines()[-1])
    home = sessions_dir / "s" / "team-a.nb"
    assert environment == session_environment(home, session.token, {"SEED": "42"},
                                              environment["USER"])  # fmt: skip
    assert not any(secret in log for secret in CANARIES.values())
    assert stat.S_IMODE((sessions_dir / "s").stat().st_mode) == 0o700
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    for suffix in ("json", "log", "owner"):
        assert stat.S_IMODE((sessions_dir / "s" / f"team-a.nb.{suffix}").stat().st_mode) == 0o600
    assert stat.S_IMODE((sessions_dir / "s" / "locks").stat().st_mode) == 0o700
    assert {path.name for path in home.iterdir()} >= {"work", "tmp", ".jupyter"}
    sessions.stop("team-a", "nb")


def test_the_environment_is_built_from_nothing_and_the_job_cannot_move_the_home():
    home = Path("/srv/sessions/team-a.nb")
    job = {"SEED": "1", "PATH": "/opt/conda/bin:/usr/bin", "HOME": "/root",
           "JUPYTER_TOKEN": "guess", "JUPYTER_CONFIG_DIR": "/etc",
           "JUPYTER_CONFIG_PATH": "work/cfg"}  # fmt: skip
    env = session_environment(home, "t0ken", job, "allot-abc")
    assert env["SEED"] == "1" and env["PATH"] == "/opt/conda/bin:/usr/bin"  # the job's own
    assert env["HOME"] == str(home) and env["JUPYTER_TOKEN"] == "t0ken"
    assert env["JUPYTER_CONFIG_DIR"] == str(SERVER_CONFIG)  # the portal's, not the home's
    assert "JUPYTER_CONFIG_PATH" not in env
    assert all(value.startswith(str(home)) for key, value in env.items()
               if key.startswith(("JUPYTER_", "IPYTHON"))
               and key not in ("JUPYTER_TOKEN", "JUPYTER_CONFIG_DIR"))  # fmt: skip
    assert set(env) == {"PATH", "LANG", "SEED", "HOME", "USER", "LOGNAME", "TMPDIR", "SHELL",
                        "JUPYTER_TOKEN", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR",
                        "JUPYTER_RUNTIME_DIR", "IPYTHONDIR", "JUPYTERLAB_SETTINGS_DIR",
                        "JUPYTERLAB_WORKSPACES_DIR"}  # fmt: skip


@as_root
@pytest.mark.slow
def test_stopping_a_session_ends_every_process_and_file_of_its_user_and_the_user(
    make_sessions, sessions_dir, session_python
):
    """A kernel that escapes the server's process group (setsid) and leaves a file in /tmp is
    gone with its session, and so is the session's user."""
    marker = f"/tmp/allot-left-{uuid.uuid4().hex}"
    escape = (
        "import subprocess, sys, time; "
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], "
        f"start_new_session=True); open({marker!r}, 'w').write('left'); time.sleep(300)"
    )
    sessions = make_sessions(command=(session_python, "-c", escape))
    session = sessions.start("team-a", "nb")
    account = pwd.getpwnam(session_user("team-a", "nb"))
    assert wait(lambda: Path(marker).exists(), 30)
    assert Path(marker).stat().st_uid == account.pw_uid
    home = sessions_dir / "team-a.nb"
    assert (home.stat().st_uid, stat.S_IMODE(home.stat().st_mode)) == (account.pw_uid, 0o700)
    assert stat.S_IMODE(sessions_dir.stat().st_mode) == 0o711
    for suffix in ("json", "log", "owner"):
        info = (sessions_dir / f"team-a.nb.{suffix}").stat()
        assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o600), suffix
    info = (sessions_dir / "locks").stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (os.getuid(), 0o700)
    assert len(_processes_of(account.pw_uid)) >= 3  # watchdog, "server", the escaped one

    assert sessions.stop("team-a", "nb")
    assert wait(lambda: not _processes_of(account.pw_uid), 10)
    assert not Path(marker).exists() and not home.exists()
    with pytest.raises(KeyError):
        pwd.getpwnam(account.pw_name)
    assert sessions.get("team-a", "nb") is None and not sessions_module._alive(session.pid)


def test_a_private_path_that_cannot_be_closed_is_a_refusal(sessions_dir, monkeypatch):
    secret = sessions_dir / "secret_key"
    secret.write_text("canary")
    secret.chmod(0o644)
    chmod = os.chmod

    def read_only(path, mode, **kwargs):
        if Path(path) == secret:
            raise PermissionError(30, "Read-only file system")
        return chmod(path, mode, **kwargs)

    monkeypatch.setattr(sessions_module.os, "chmod", read_only)
    monkeypatch.setattr(LocalSessions, "isolated", property(lambda self: True))
    sessions = LocalSessions(sessions_dir / "s", python="/bin/sh", private=(secret,))  # (never run)
    with pytest.raises(SessionNotStarted, match="secret_key is open to every user"):
        sessions.start("team-a", "nb")
    assert "could not be closed (Read-only file system)" in sessions.failure("team-a", "nb")


def test_the_portal_builds_its_sessions_from_the_settings(settings, tmp_path):
    from portal.scheduling.agent import _build_agent

    settings.ALLOT_SIM_JUPYTER = True
    settings.ALLOT_SESSIONS_DIR = tmp_path
    settings.ALLOT_SESSIONS_PYTHON = "/opt/sessions/bin/python"
    settings.ALLOT_SESSIONS_PRIVATE_PATHS = [tmp_path / "var", tmp_path / ".env"]
    sessions = _build_agent("simulated").sessions
    assert sessions.python == "/opt/sessions/bin/python"
    assert sessions.private == (tmp_path / "var", tmp_path / ".env")
    assert sessions.single_user is False  # only `make run` says otherwise


@pytest.mark.parametrize(
    ("extra", "fails"),
    [({"ALLOT_SESSIONS_SINGLE_USER": "1"}, False),
     ({"ALLOT_SESSIONS_SINGLE_USER": "1", "REDIS_URL": "redis://127.0.0.1:6379/0"}, True)],
)  # fmt: skip
def test_the_single_user_trial_is_for_the_embedded_portal_only(extra, fails):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_", "REDIS_"))}
    code = (
        "import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
        "from django.conf import settings; print(settings.ALLOT_SESSIONS_PRIVATE_PATHS)"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **extra},
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert (done.returncode != 0) == fails, done.stderr
    if fails:
        assert "ALLOT_SESSIONS_SINGLE_USER=1 is for the embedded single-user `make run`" in (
            done.stderr
        )


def test_the_default_private_paths_cover_var_env_and_the_sqlite_database():
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ALLOT_", "DATABASE_"))}
    code = ("import os; os.environ['DJANGO_SETTINGS_MODULE'] = 'portal.settings'; "
            "from django.conf import settings; "
            "print('\\n'.join(map(str, settings.ALLOT_SESSIONS_PRIVATE_PATHS)))")  # fmt: skip
    env = {**clean, "DATABASE_URL": "sqlite:////srv/allot/db.sqlite3",
           "SECRET_KEY_FILE": str(ROOT / "pyproject.toml"),
           "ALLOT_SESSIONS_PRIVATE_PATHS": "/etc/allot,/srv/keys"}  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        str(ROOT / "var"), str(ROOT / ".env"), "/srv/allot/db.sqlite3",
        "/srv/allot/db.sqlite3-wal", "/srv/allot/db.sqlite3-shm", str(ROOT / "pyproject.toml"),
        "/etc/allot", "/srv/keys",
    ]  # fmt: skip


def test_compose_runs_no_notebook_in_the_portals_containers_and_make_run_is_the_trial():
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert compose["x-allot"]["environment"]["ALLOT_SIM_JUPYTER"] == "${ALLOT_SIM_JUPYTER:-0}"
    for name in ("web", "worker", "notifier", "beat", "migrate"):
        environment = compose["services"][name]["environment"]
        assert environment["ALLOT_SIM_JUPYTER"].endswith(":-0}"), name
        assert "ALLOT_SESSIONS_SINGLE_USER" not in environment, name
    (run,) = [line for line in (ROOT / "Makefile").read_text().splitlines() if "runserver" in line]
    assert "ALLOT_SESSIONS_SINGLE_USER=1 " in run


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
            if int(fields["Uid"].split()[0]) == uid and fields["State"].split()[0] != "Z":
                found.append(int(entry.name))
    return found
