"""Issue 23: persistent workspaces of local sessions.

A user's sessions in a project share a workspace that outlives them: their home. While a session
runs, the workspace is its system user's, 0700; at rest it is the portal's (a later user given a
freed uid reads nothing); another team's session user cannot read it; it is deleted only on
request, and not while a session uses it. The servers here are stand-ins (`sleep`): the home and
the users are what is tested, not JupyterLab (tests/browser/test_jupyter.py runs the real one).
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import time

import pytest

from agents.sessions import WorkspaceBusy, workspace_folder, workspace_user

pytestmark = pytest.mark.slow
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="sessions get users of their own as root")


@pytest.fixture
def sessions(make_sessions, session_python):
    return make_sessions(command=(session_python, "-c", "import time; time.sleep(120)"),
                         single_user=True)  # fmt: skip


def as_account(account: str, *command: str, cwd: str = "/") -> subprocess.CompletedProcess:
    user = pwd.getpwnam(account)
    return subprocess.run(command, user=user.pw_uid, group=user.pw_gid, extra_groups=[], env={},
                          cwd=cwd, capture_output=True, text=True, timeout=30)  # fmt: skip


def prepared(sessions, project: str, name: str) -> None:
    """Wait for the watchdog to have prepared the home (its `work/` folder)."""
    home = sessions.workspace(project, "bob") if name.startswith("nb") else None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (home and (home / "work").is_dir()):
        time.sleep(0.1)


def test_the_workspace_folder_is_the_username_or_a_digest():
    assert workspace_folder("bob") == "bob"
    assert workspace_folder("b.o+b@x_y-z") == "b.o+b@x_y-z"
    for strange in ("..", ".", "a/b", ".hidden", ""):
        assert workspace_folder(strange).startswith("~") and "/" not in workspace_folder(strange)


@as_root
def test_files_outlive_the_session_and_belong_to_no_session_user_at_rest(sessions):
    home = sessions.workspace("team-a", "bob")
    sessions.start("team-a", "nb-1", user="bob")
    prepared(sessions, "team-a", "nb-1")
    account = workspace_user("team-a", "bob")
    info = os.stat(home)
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (pwd.getpwnam(account).pw_uid, 0o700)
    wrote = as_account(account, "sh", "-c", "echo kept > work/notes.txt", cwd=str(home))
    assert wrote.returncode == 0, wrote.stderr

    assert sessions.stop("team-a", "nb-1")
    assert (home / "work" / "notes.txt").read_text() == "kept\n"
    for path in (home, home / "work", home / "work" / "notes.txt"):
        assert os.stat(path).st_uid == os.geteuid()  # the portal's while no session runs
    assert stat.S_IMODE(os.stat(home).st_mode) == 0o700
    with pytest.raises(KeyError):
        pwd.getpwnam(account)  # the user went with the session
    assert sessions.workspace_projects("bob") == ["team-a"]

    sessions.start("team-a", "nb-2", user="bob")  # a new launch finds the files where they were
    prepared(sessions, "team-a", "nb-2")
    read = as_account(account, "cat", "work/notes.txt", cwd=str(home))
    assert (read.returncode, read.stdout) == (0, "kept\n")
    sessions.stop("team-a", "nb-2")


@as_root
def test_another_teams_session_cannot_read_a_workspace(sessions):
    sessions.start("team-a", "nb-a", user="bob")
    sessions.start("team-b", "nb-b", user="eve")
    prepared(sessions, "team-a", "nb-a")
    bob, eve = workspace_user("team-a", "bob"), workspace_user("team-b", "eve")
    home = sessions.workspace("team-a", "bob")
    as_account(bob, "sh", "-c", "echo secret > work/secret.txt", cwd=str(home))
    for command in (("cat", f"{home}/work/secret.txt"), ("ls", str(home)),
                    ("ls", str(sessions.workspaces / "team-a"))):  # fmt: skip
        tried = as_account(eve, *command)
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, command
    sessions.stop("team-a", "nb-a")
    tried = as_account(eve, "cat", f"{home}/work/secret.txt")  # at rest: the portal's
    assert tried.returncode != 0 and "Permission denied" in tried.stderr
    sessions.stop("team-b", "nb-b")


@as_root
def test_two_sessions_of_one_workspace_share_its_user_and_one_stop_spares_the_other(sessions):
    first = sessions.start("team-a", "nb-1", user="bob")
    second = sessions.start("team-a", "nb-2", user="bob")
    prepared(sessions, "team-a", "nb-1")
    sessions.stop("team-a", "nb-1")
    assert sessions.get("team-a", "nb-2") == second and sessions.get("team-a", "nb-1") is None
    assert pwd.getpwnam(workspace_user("team-a", "bob"))  # still the running one's
    with pytest.raises(ProcessLookupError):
        os.kill(first.pid, 0)
    sessions.stop("team-a", "nb-2")
    with pytest.raises(KeyError):
        pwd.getpwnam(workspace_user("team-a", "bob"))


def test_a_workspace_is_deleted_on_request_and_not_while_a_session_uses_it(sessions):
    sessions.start("team-a", "nb-1", user="bob")
    prepared(sessions, "team-a", "nb-1")
    with pytest.raises(WorkspaceBusy, match="stop it first"):
        sessions.delete_workspace("team-a", "bob")
    sessions.stop("team-a", "nb-1")
    assert sessions.workspace("team-a", "bob").is_dir()
    assert sessions.delete_workspace("team-a", "bob")
    assert not sessions.workspace("team-a", "bob").exists()
    assert not sessions.delete_workspace("team-a", "bob")
    assert sessions.workspace_projects("bob") == []


def test_a_job_of_no_one_gets_a_home_of_its_own_removed_when_it_stops(sessions, sessions_dir):
    sessions.start("team-a", "anon")
    home = sessions_dir / "team-a.anon"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (home / "work").is_dir():
        time.sleep(0.1)
    assert (home / "work").is_dir()
    sessions.stop("team-a", "anon")
    assert not home.exists()
    assert sessions.workspace_projects("") == []
