"""Real Jupyter servers for the simulated cluster's interactive jobs, on this machine.

The simulated cluster has no containers, but a researcher who launches Jupyter expects a working
notebook. For each interactive job that asks for port 8888 the simulated agent starts a local
JupyterLab (`jupyter lab` from the installed package) bound to 127.0.0.1 on a free port, with a
random token and its base URL set to the portal's proxy path (`/sessions/{project}/{name}/`),
so every link it writes goes back through the portal. The token never leaves the portal: the
proxy adds it to each request, so the server is useless to anyone who reaches the port without
going through the portal's login and project check.

A notebook runs a researcher's code, and researchers are untrusted: a session gets nothing of
the portal's (issue 22).

- Its user. When the portal runs as root, each session runs as a system user of its own
  (`session_user`: "allot-" and 12 hex digits of its project and name), made with `useradd
  --system` when the session starts and deleted, with every process and temporary file it left,
  when it stops. It cannot read the portal's private files, another session's home, or
  `/proc/<pid>/environ` of a process that is not its own (the kernel allows that only to the
  process's owner or to whoever may ptrace it). A portal that is not root cannot switch users,
  so it refuses to start a session (`SessionNotStarted`, and the job fails saying why) unless it
  is told it is one person's embedded trial (`single_user`, which `make run` sets): then the
  notebook runs as the portal's own user, whose code it is anyway.
- Its network. Sessions' users all have one primary group, `agents.firewall.GROUP`; before the
  first session starts, the portal installs an iptables chain that refuses every TCP connection
  a process of that group opens to the portal's PostgreSQL and Redis (`guarded`: DATABASE_URL
  and REDIS_URL), which commonly trust local connections. A chain that cannot be installed is a
  refusal, unless the operator turned the guard off (ALLOT_SESSIONS_FIREWALL=0).
- Its environment, built from nothing (`session_environment`): PATH, LANG, HOME and Jupyter's
  directories inside the session's home, its token and the job's own environment. Nothing of the
  portal's environment (SECRET_KEY, DATABASE_URL, REDIS_URL, ...) reaches it.
- Its files. The sessions directory belongs to the portal: 0711 when sessions have users of
  their own (a user reaches its home by name but lists nothing), else 0700. Each session's home
  (`<project>--<name>/`, its notebooks in `work/`) is 0700 and the session's own, and the server
  runs with umask 077. The session's description (port, token, pid), its lock, its server's log
  and why it did not start are the portal's 0600 files beside the homes. The `private` paths
  the portal names (its var/, database file, .env, secret files) are closed to other users
  before a session starts (files 0600, directories 0700, or 0711 on the way to the sessions);
  one that cannot be closed is a refusal.

Each server runs under a small watchdog (`agents/watchdog.py`, as the session's user) that
prepares the home, then ends the server when the portal process that started it is gone, so
stopping `make run` leaves no stray Jupyter behind; the next cycle of a new portal process starts
again the sessions the database still holds. The watchdog's text is passed to `python -I -c`, so
a session needs nothing of the portal's files nor its import path: it starts the same from a
venv with `requirements.txt` only and the project on no path (the image's /app), an editable
install, or a tree the sessions' users may not read (issue 24).

A session is described by a small JSON file in `directory` (port, token, pid), written when the
server starts and removed when it stops, so every process of the portal on this machine (the web
process that proxies, the one that runs the cycle) sees the same sessions, and starting twice
does not start two servers (an exclusive lock per session).
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import hashlib
import itertools
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from agents import firewall
from agents.ports import free_port
from agents.watchdog import alive as _alive

JUPYTER_PORT = 8888
USER_PREFIX = "allot-"  # a session's system user: the prefix and 12 hex digits (`session_user`)
# JupyterLab as `python -m jupyterlab` starts it, less two costs paid before the server answers
# that a session never needs (issue 24 item 1): `rfc3987_syntax`, which jsonschema imports when
# installed for the "iri" format only (Jupyter's event schemas need no such check) and which
# builds a Lark grammar at import (1.0 s of CPU, 4 to 5 s on a busy machine); and Node.js, which
# JupyterLab runs at import (`yarn config`, 0.3 s of CPU) to learn the npm registry it would
# build extensions from - sessions build nothing.
LAUNCH_LAB = (
    "import sys; sys.modules['rfc3987_syntax'] = None; "
    "import jupyterlab.commands as commands; "
    "commands._yarn_config = lambda logger: {'yarn config': {}, 'npm config': {}}; "
    "from jupyterlab.labapp import main; sys.exit(main())"
)
# The watchdog's own source, run with `python -I -c`: it needs no file of the portal's
WATCHDOG_SOURCE = Path(__file__).with_name("watchdog.py").read_text()
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
# The notebook server's configuration: the portal's, read-only to sessions (issue 32 item 1)
SERVER_CONFIG = Path(__file__).with_name("jupyter_config")
STEERING_PREFIX = "JUPYTER_"  # a job's variables that would steer the server: never passed
ADMIN_PATH = firewall.ADMIN_PATH  # where useradd, userdel and iptables live
NOLOGIN = next((p for p in ("/usr/sbin/nologin", "/sbin/nologin") if Path(p).exists()),
               "/bin/false")  # fmt: skip
# Temporary files a session's user left in these shared places go with the user, so a later
# session that is given the same uid finds nothing of this one.
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm")
# useradd's exits worth another try: 1 "cannot lock /etc/passwd" and 10 the same of /etc/group
# (other processes hold the locks for seconds on a busy machine), 4 and 9 a uid or name another
# useradd took meanwhile. A session waits for them rather than fails.
USERADD_BUSY = (1, 4, 9, 10)
ACCOUNT_PATIENCE_S = 60.0
STRIPES = 64  # lock files per kind (`_striped`)
_accounts = threading.Lock()  # one useradd / userdel at a time from this process
Environment = Mapping[str, str] | Iterable[tuple[str, str]]  # a job's variables


class SessionNotStarted(RuntimeError):
    """A session may not, or could not, start on this machine; the message says why."""


@dataclass(frozen=True)
class Session:
    """Where a job's Jupyter server answers (only the portal's proxy should talk to it)."""

    project: str
    name: str
    port: int
    token: str
    pid: int
    base_url: str
    host: str = "127.0.0.1"  # a local server; under Kubernetes, the job's Service

    @property
    def upstream(self) -> str:
        """The server's own address, with its base URL."""
        return f"http://{self.host}:{self.port}{self.base_url}"


def session_path(project: str, name: str) -> str:
    """The portal's proxy path of a job's session."""
    return f"/sessions/{project}/{name}/"


def way_back(portal_url: str, project: str, name: str) -> dict:
    """JupyterLab's settings that lead back to the portal from the lab (issue 34 item 7: no way
    back to the portal from it), as JupyterHub's do: with `hubHost` and `hubPrefix` in its page
    config, JupyterLab's own hub extension puts "Hub Control Panel" in the File menu (opening
    `<hubHost><hubPrefix>home`) and, when the server is gone, offers to restart it at
    `<hubPrefix>spawn`; the portal answers both with the job's page (`portal/web/urls.py`).
    `portal_url` is the portal's origin when notebooks have one of their own, else "" (the
    same origin)."""
    prefix = f"/jobs/{project}/{name}/hub/"
    return {"page_config_data": {"hubHost": portal_url, "hubPrefix": prefix}}


def session_key(project: str, name: str) -> str:
    """The one name of a job's session files: `project.name`. A dot is in no DNS label, so no
    two (project, job) pairs share it - `project--name` did: job `vision--nb` of `ml` and job
    `nb` of `ml--vision` had one server (issue 32 item 2)."""
    return f"{project}.{name}"


def session_user(project: str, name: str) -> str:
    """The system user a session of no one's runs as when the portal runs as root."""
    return USER_PREFIX + hashlib.sha256(f"{project}/{name}".encode()).hexdigest()[:12]


def workspace_user(project: str, user: str) -> str:
    """The system user the sessions of `user`'s workspace in `project` run as (as root)."""
    return USER_PREFIX + hashlib.sha256(f"workspace:{project}/{user}".encode()).hexdigest()[:12]


def workspace_folder(user: str) -> str:
    """The folder of `user`'s workspace in its project's folder: the username when it is a
    plain file name (Django allows letters, digits and @.+-_), else a digest of it."""
    if re.fullmatch(r"[A-Za-z0-9@+_-][A-Za-z0-9@.+_-]{0,99}", user):
        return user
    return "~" + hashlib.sha256(user.encode()).hexdigest()[:24]


class WorkspaceBusy(RuntimeError):
    """A workspace a running session uses cannot be deleted; the message says which."""


@dataclass(frozen=True)
class _Owner:
    """Whose a session's home is: its system user and home, and whether that is a workspace."""

    account: str
    home: str
    workspace: bool = False


# The shell of a session's JupyterLab terminals: it runs as the session's user, behind the same
# firewall, with the same environment as its notebooks' `!commands` (issue 34 item 7).
TERMINAL_SHELL = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"


def session_environment(
    home: Path, token: str, environment: Mapping[str, str], user: str, python: str = ""
) -> dict[str, str]:
    """A session's whole environment, built from nothing: a PATH that finds its Python's tools
    (`python`, else this one's), LANG, the job's own variables but those that steer Jupyter
    (`JUPYTER_*`), then HOME, TMPDIR, Jupyter's data, runtime and IPython's directories inside
    the session's home, and its token. Nothing of the portal's own environment. The server's
    configuration comes from SERVER_CONFIG, a folder of the portal's, never from the home the
    researcher writes to (a `jupyter_server_config.py` there weakened the server's CSP: issue
    32 item 1); its Python runs with -I, so PYTHONPATH and the like reach its kernels only."""
    env = {"PATH": f"{Path(python or sys.executable).parent}:{SYSTEM_PATH}", "LANG": "C.UTF-8"}
    env.update({str(key): str(value) for key, value in environment.items()
                if not str(key).startswith(STEERING_PREFIX)})  # fmt: skip
    env.update({
        "HOME": str(home), "USER": user, "LOGNAME": user, "TMPDIR": str(home / "tmp"),
        "SHELL": TERMINAL_SHELL,  # JupyterLab's terminals (issue 34 item 7)
        "JUPYTER_TOKEN": token,
        "JUPYTER_CONFIG_DIR": str(SERVER_CONFIG),
        # JupyterLab's own state (JSON, never code), which it keeps under the config dir by
        # default: in the home, where it is the researcher's and the lab can write it
        "JUPYTERLAB_SETTINGS_DIR": str(home / ".jupyter" / "lab" / "user-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / ".jupyter" / "lab" / "workspaces"),
        "JUPYTER_DATA_DIR": str(home / ".local" / "share" / "jupyter"),
        "JUPYTER_RUNTIME_DIR": str(home / ".runtime"),
        "IPYTHONDIR": str(home / ".ipython"),
    })  # fmt: skip
    return env


class LocalSessions:
    """Starts, finds and stops local JupyterLab servers, one per (project, job name).

    `python`: the interpreter that runs the watchdog and (unless `command` says otherwise)
    JupyterLab and its kernels, the portal's own by default; sessions' users must be able to run
    it. `single_user`: this portal is one person's embedded trial (`make run`), so a portal that
    is not root may run notebooks as its own user; otherwise it refuses to. `private`: the
    portal's paths no session may read (closed to other users before each start).
    `workspaces`: where users' persistent workspaces live (default: `directory`/workspaces).
    `guarded`: the URLs of the services no session may connect to (the portal's database and
    broker; `agents.firewall`), installed before the first isolated session starts; None: no
    guard (the operator's choice, or a portal that is not root and has no users to match)."""

    def __init__(
        self,
        directory: Path,
        command: tuple[str, ...] | None = None,
        *,
        python: str | None = None,
        single_user: bool = False,
        portal_url: str = "",
        private: Iterable[Path | str] = (),
        workspaces: Path | str | None = None,
        guarded: Iterable[str] | None = None,
    ):
        self.directory = Path(directory).absolute()
        self.workspaces = Path(workspaces or self.directory / "workspaces").absolute()
        self.python = python or sys.executable
        # -I: the server's Python takes nothing from the session's environment or home
        # (PYTHONPATH, PYTHONSTARTUP, a user site): only its kernels get those (issue 32)
        self.command = tuple(command or (self.python, "-I", "-c", LAUNCH_LAB))
        self.single_user = single_user
        self.portal_url = portal_url.rstrip("/")
        self.private = tuple(Path(path).absolute() for path in private)
        self.guarded = None if guarded is None else firewall.services(*guarded)
        self._guard_lock = threading.Lock()
        self._sessions_gid: int | None = None  # set once the group exists and the guard stands

    @property
    def isolated(self) -> bool:
        """True when each session runs as a system user of its own (the portal runs as root)."""
        return os.geteuid() == 0

    # -- the life of a session -------------------------------------------------------------------

    def start(
        self, project: str, name: str, environment: Environment = (), user: str = ""
    ) -> Session:
        """Start the job's server unless it runs already; its description either way. A job of
        a `user`'s gets that user's workspace in `project` as its home (kept when it stops);
        one of no one's a home of its own, removed when it stops.

        Raises SessionNotStarted when it may not or could not start; `failure` then says why."""
        with self._locked(project, name):
            running = self._read(project, name)
            if running is not None and _alive(running.pid):
                return running
            try:
                session = self._spawn(project, name, dict(environment), user)
            except SessionNotStarted as exc:
                _write_private(self._refusal(project, name), str(exc))
                raise
            self._refusal(project, name).unlink(missing_ok=True)
            return session

    def get(self, project: str, name: str) -> Session | None:
        """The job's running session, or None."""
        session = self._read(project, name)
        return session if session is not None and _alive(session.pid) else None

    def ready(self, project: str, name: str) -> bool:
        """True once the job's server answers its status API."""
        session = self.get(project, name)
        if session is None:
            return False
        request = urllib.request.Request(
            f"{session.upstream}api/status", headers={"Authorization": f"token {session.token}"}
        )
        try:
            with urllib.request.urlopen(request, timeout=1) as response:
                return response.status == 200
        except OSError:
            return False

    def warm(self, project: str, name: str) -> None:
        """Ask the job's server once for what JupyterLab's first notebook will ask: the answer
        to /api/nbconvert imports nbconvert on the server's event loop (0.5 to 1.2 s on a busy
        machine, every other request waiting), so it is better paid while the browser still
        loads the lab's scripts (issue 24 item 1). Errors are ignored: it is only a head start."""
        session = self.get(project, name)
        if session is None:
            return
        request = urllib.request.Request(
            f"{session.upstream}api/nbconvert", headers={"Authorization": f"token {session.token}"}
        )
        with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()

    def failure(self, project: str, name: str) -> str | None:
        """Why the job has no server: it was refused or could not start, or it started and has
        exited (its last log line); None while it runs or when it was never started."""
        session = self._read(project, name)
        if session is None:
            try:
                return f"Jupyter was not started: {self._refusal(project, name).read_text()}"
            except OSError:
                return None
        if _alive(session.pid):
            return None
        try:
            lines = self._log(project, name).read_text(errors="replace")
        except OSError:
            lines = ""
        last = [line for line in lines.splitlines() if line.strip()][-1:] or ["no output"]
        blocked = _unreachable(self.directory) if self.isolated else None
        hint = f" (the sessions' users cannot reach {self.directory}: {blocked})" if blocked else ""
        return f"the Jupyter server exited: {last[0][-300:]}{hint}"

    def stop(self, project: str, name: str, grace_s: float = 0.5) -> bool:
        """Stop the job's server and remove its files; False when there was no server. With a
        user of its own (unless another session of the same workspace still runs as it), every
        process of that user and the user go too. A workspace stays, given back to the portal
        (its files then belong to no session's user, so a later user given the same uid reads
        nothing); another home goes."""
        with self._locked(project, name):
            session = self._read(project, name)
            owner = self._owner(project, name)
            self._file(project, name).unlink(missing_ok=True)
            self._refusal(project, name).unlink(missing_ok=True)
            if session is not None:
                _terminate(session.pid, grace_s)
            with self._account_locked(owner.account):
                shared = self._in_use(owner.account, "account", besides=(project, name))
                account = _account_of(owner.account) if self.isolated and not shared else None
                if account is not None:
                    _kill_all(account, self.python)
                if not owner.workspace:
                    shutil.rmtree(owner.home, ignore_errors=True)
                elif account is not None:
                    _chown_tree(Path(owner.home), os.geteuid(), os.getegid())
                self._log(project, name).unlink(missing_ok=True)
                self._owner_file(project, name).unlink(missing_ok=True)
                if account is not None:
                    _remove_user(account)
        return session is not None

    # -- workspaces ---------------------------------------------------------------------------

    def workspace(self, project: str, user: str) -> Path:
        """Where `user`'s workspace in `project` is (whether or not it exists yet)."""
        return self.workspaces / project / workspace_folder(user)

    def workspace_projects(self, user: str) -> list[str]:
        """The projects in which `user` has a workspace."""
        if not self.workspaces.is_dir():
            return []
        folder = workspace_folder(user)
        return sorted(p.name for p in self.workspaces.iterdir() if (p / folder).is_dir())

    def delete_workspace(self, project: str, user: str) -> bool:
        """Delete `user`'s workspace in `project` and every file in it; False when there was
        none. Raises WorkspaceBusy while a session uses it (stop the session first)."""
        home = self.workspace(project, user)
        with self._account_locked(workspace_user(project, user)):
            if self._in_use(str(home), "home"):
                raise WorkspaceBusy(
                    f"a Jupyter session of {user}'s in {project} uses the workspace: stop it first"
                )
            if not home.is_dir():
                return False
            shutil.rmtree(home)
        return True

    def all(self) -> list[Session]:
        """Every session with a live server."""
        found = []
        for path in sorted(self.directory.glob("*.json")):
            session = _load(path)
            if session is not None and _alive(session.pid):
                found.append(session)
        return found

    def refusal(self) -> str | None:
        """Why no session may start here, or None."""
        if self.isolated:
            blocked = _unreachable(Path(self.python), executable=True)
            if blocked:
                return (
                    f"the sessions' users cannot run {self.python} ({blocked}): install a Python "
                    "with JupyterLab that every user may run and name it in ALLOT_SESSIONS_PYTHON"
                )
            return None
        if self.single_user:
            return None
        uid = os.geteuid()
        return (
            f"refusing to run a researcher's notebook as the portal's own user "
            f"({_username(uid)}, uid {uid}): it could read the portal's environment, files and "
            "database. Run the portal as root, so that each session gets a system user of its "
            "own, or turn local sessions off (ALLOT_SIM_JUPYTER=0; ALLOT_AGENT=kubernetes runs "
            "notebooks in pods); only a one-person trial with `make run` may allow it "
            "(ALLOT_SESSIONS_SINGLE_USER=1)."
        )

    # -- files and processes -----------------------------------------------------------------

    def _spawn(self, project: str, name: str, environment: dict[str, str], user: str) -> Session:
        reason = self.refusal()
        if reason:
            raise SessionNotStarted(reason)
        self._seal()
        gid = self._guard() if self.isolated else None
        if user:
            owner = _Owner(workspace_user(project, user), str(self.workspace(project, user)), True)
        else:
            owner = _Owner(session_user(project, name), str(self._home(project, name)))
        _write_private(self._owner_file(project, name), json.dumps(owner.__dict__))
        with self._account_locked(owner.account):  # a stop of the same user's waits for this
            if owner.workspace:
                self._workspace_folders(project)
            home = Path(owner.home)
            account = _account(owner.account, home, project, name, gid) if gid is not None else None
            _make_home(home, account)
            return self._run(project, name, environment, home, account)

    def _guard(self) -> int:
        """The sessions' group's id, the group made and the firewall chain installed (once per
        process) first. SessionNotStarted when either cannot be done."""
        with self._guard_lock:
            if self._sessions_gid is None:
                gid = _sessions_group()
                if self.guarded:
                    try:
                        firewall.guard(self.guarded, gid)
                    except firewall.FirewallError as exc:
                        raise SessionNotStarted(
                            f"the portal's database and broker could not be closed to notebooks: "
                            f"{exc}"
                        ) from exc
                self._sessions_gid = gid
            return self._sessions_gid

    def _run(self, project: str, name: str, environment: dict[str, str], home: Path,
             account: pwd.struct_passwd | None) -> Session:  # fmt: skip
        port, token, base_url = free_port(), secrets.token_hex(24), session_path(project, name)
        user = account.pw_name if account else _username(os.geteuid())
        as_user = {"user": account.pw_uid, "group": self._sessions_gid, "extra_groups": []} if (
            account) else {}  # fmt: skip
        watchdog = [self.python, "-I", "-c", WATCHDOG_SOURCE, "--parent", str(os.getpid()), "--"]
        server = [
            *self.command,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--ServerApp.base_url={base_url}",
            f"--ServerApp.root_dir={home / 'work'}",
            "--ServerApp.allow_remote_access=True",
            "--ServerApp.port_retries=0",  # a server on another port than ours is unreachable
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--ServerApp.tornado_settings={json.dumps(way_back(self.portal_url, project, name))}",
        ]
        try:
            with _open_private(self._log(project, name)) as log:
                process = subprocess.Popen(
                    watchdog + server,
                    cwd=home,
                    env=session_environment(home, token, environment, user, self.python),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # a group of its own: the watchdog and the server
                    umask=0o077,
                    **as_user,
                )
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            raise SessionNotStarted(f"the Jupyter server could not be started: {exc}") from exc
        session = Session(project, name, port, token, process.pid, base_url)
        _write_private(self._file(project, name), json.dumps(session.__dict__))
        return session

    def _seal(self) -> None:
        """Close the sessions directory, the files in it and the `private` paths to others."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o711 if self.isolated else 0o700)
        self._rekey()
        with os.scandir(self.directory) as entries:
            for entry in entries:  # descriptions and logs 0600, homes 0700 (earlier versions: 0644)
                if Path(entry.path) == self.workspaces:
                    continue  # a passage of its own (`_workspace_folders`)
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and entry.name.endswith((".lock", ".user-lock")):
                    os.unlink(entry.path)  # a lock file of a key's own, as before `_striped`
                    continue
                if stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode):
                    _close(Path(entry.path), info, passage=False, strict=False)
        for path in self.private:
            try:
                info = os.stat(path)
            except OSError:
                continue
            passage = self.isolated and stat.S_ISDIR(info.st_mode) and (
                self.directory.is_relative_to(path) or self.workspaces.is_relative_to(path)
            )  # fmt: skip
            _close(path, info, passage, strict=self.isolated)

    def _workspace_folders(self, project: str) -> None:
        """The workspaces' folder and the project's in it: the portal's, 0711 when sessions
        have users of their own (each reaches its workspace by name, lists nothing), else 0700."""
        mode = 0o711 if self.isolated else 0o700
        for folder in (self.workspaces, self.workspaces / project):
            with contextlib.suppress(FileExistsError):
                os.mkdir(folder, mode)
            info = os.lstat(folder)
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                raise SessionNotStarted(f"{folder} is not a directory of the portal's")
            os.chmod(folder, mode)

    def _in_use(self, value: str, field: str, besides: tuple[str, str] | None = None) -> bool:
        """True when a live session other than `besides` has `value` as its owner's `field`."""
        for path in self.directory.glob("*.*.owner"):
            project, _, name = path.name.removesuffix(".owner").partition(".")
            if (project, name) == besides or self.get(project, name) is None:
                continue
            with contextlib.suppress(OSError, ValueError, TypeError):
                if getattr(_Owner(**json.loads(path.read_text())), field) == value:
                    return True
        return False

    def _rekey(self) -> None:
        """Sessions an earlier version described under `project--name` (see `session_key`)
        take their keys: their files, and the home of a job of no one's, are renamed, so a
        server started before the upgrade is found and stopped as before."""
        for path in self.directory.glob("*.json"):
            stem = path.name.removesuffix(".json")
            session = None if "." in stem else _load(path)
            if session is None:
                continue
            key = session_key(session.project, session.name)
            for suffix in (".log", ".failed", ".owner", ".json"):  # the description last
                old = self.directory / f"{stem}{suffix}"
                if old.exists():
                    os.replace(old, self.directory / f"{key}{suffix}")
            old_home, home = self.directory / stem, self._home(session.project, session.name)
            if old_home.is_dir() and not home.exists():
                os.replace(old_home, home)
                owner = self._owner(session.project, session.name)
                if owner.home == str(old_home):
                    _write_private(self._owner_file(session.project, session.name),
                                   json.dumps({**owner.__dict__, "home": str(home)}))  # fmt: skip

    def _owner(self, project: str, name: str) -> _Owner:
        """Whose the session's home is (as recorded when it started; else, as before workspaces,
        its own home and user)."""
        try:
            return _Owner(**json.loads(self._owner_file(project, name).read_text()))
        except (OSError, ValueError, TypeError):
            return _Owner(session_user(project, name), str(self._home(project, name)))

    def _owner_file(self, project: str, name: str) -> Path:
        return self.directory / f"{session_key(project, name)}.owner"

    def _account_locked(self, account: str):
        """One start or stop at a time of the sessions that run as `account`, in every process."""
        return self._striped("account", account)

    def _read(self, project: str, name: str) -> Session | None:
        return _load(self._file(project, name))

    def _file(self, project: str, name: str) -> Path:
        return self.directory / f"{session_key(project, name)}.json"

    def _log(self, project: str, name: str) -> Path:
        return self.directory / f"{session_key(project, name)}.log"

    def _refusal(self, project: str, name: str) -> Path:
        return self.directory / f"{session_key(project, name)}.failed"

    def _home(self, project: str, name: str) -> Path:
        return self.directory / session_key(project, name)

    def _locked(self, project: str, name: str):
        """One start or stop at a time of the job's session, in every process."""
        return self._striped("job", session_key(project, name))

    @contextlib.contextmanager
    def _striped(self, kind: str, key: str):
        """An exclusive lock (flock, so across processes) on `key`'s stripe of `kind`.

        A file per key was one more file for every job and user ever seen, never removed (a
        lock file cannot be unlinked safely while others may wait on it): 8,700 of them after
        a few benchmark runs, which every session start (`_seal`) and stop (`_in_use`) then
        listed - a fill cycle stopping 4,000 jobs spent 25 s there. A fixed number of stripes
        keeps the directory small; two keys sharing a stripe only wait for each other, and a
        job's stripe is always taken before an account's, never the other way round."""
        folder = self.directory / "locks"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        stripe = int.from_bytes(hashlib.blake2b(key.encode(), digest_size=4).digest()) % STRIPES
        path = folder / f"{kind}-{stripe:03d}.lock"
        with open(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _close(path: Path, info: os.stat_result, passage: bool, strict: bool) -> None:
    """Take group's and others' rights from `path`, but leave `passage` directories 0711 (the
    sessions' users go through them). `strict`: a path others could still read is a refusal."""
    mode = stat.S_IMODE(info.st_mode)
    wanted = (mode & 0o700) | (0o011 if passage else 0)
    if mode == wanted:
        return
    try:
        os.chmod(path, wanted)
    except OSError as exc:
        if strict and mode & 0o007 & ~wanted:
            raise SessionNotStarted(
                f"{path} is open to every user of this machine (mode {mode:04o}) and could not "
                f"be closed ({exc.strerror}), so a notebook could read it: make it private "
                "(chmod go-rwx)"
            ) from exc


def _make_home(home: Path, account: pwd.struct_passwd | None) -> None:
    """The session's home, 0700 and (with a user of its own) that user's, notebooks and all."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(home, 0o700)
    info = os.lstat(home)
    if not stat.S_ISDIR(info.st_mode):
        raise SessionNotStarted(f"{home} is not a directory")
    owner = (account.pw_uid, account.pw_gid) if account else (info.st_uid, info.st_gid)
    if (info.st_uid, info.st_gid) != owner:  # a home of an earlier user, or of the portal
        _chown_tree(home, *owner)
    os.chmod(home, 0o700)


def _chown_tree(top: Path, uid: int, gid: int) -> None:
    """`top` and everything in it to (uid, gid), links themselves and not what they point to."""
    with contextlib.suppress(FileNotFoundError):
        os.chown(top, uid, gid, follow_symlinks=False)
    for folder, dirs, files in os.walk(top):
        for entry in (*dirs, *files):
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(folder, entry), uid, gid, follow_symlinks=False)


def _sessions_group() -> int:
    """The id of the group every session's user has as its primary group (`firewall.GROUP`),
    made when it does not exist yet."""
    try:
        return grp.getgrnam(firewall.GROUP).gr_gid
    except KeyError:
        pass
    command = ["groupadd", "--system", "--force", firewall.GROUP]  # --force: made meanwhile is fine
    try:
        with _accounts:
            done = subprocess.run(command, capture_output=True, text=True,
                                  env={"PATH": ADMIN_PATH}, timeout=30)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as exc:
        raise SessionNotStarted(f"could not create the group {firewall.GROUP}: {exc}") from exc
    try:
        return grp.getgrnam(firewall.GROUP).gr_gid
    except KeyError:
        why = done.stderr.strip() or f"groupadd exited with {done.returncode}"
        raise SessionNotStarted(f"could not create the group {firewall.GROUP}: {why}") from None


def _account(user: str, home: Path, project: str, name: str, gid: int) -> pwd.struct_passwd:
    """The session's system user, made when it does not exist yet, in the sessions' group."""
    found = _account_of(user)
    if found is not None:
        return found
    comment = re.sub(r"[^A-Za-z0-9._/ -]", "-", f"Allot session {project}/{name}")
    command = ["useradd", "--system", "--gid", str(gid), "--no-create-home", "--home-dir",
               str(home), "--shell", NOLOGIN, "--comment", comment, user]  # fmt: skip
    why, deadline = "", time.monotonic() + ACCOUNT_PATIENCE_S
    for attempt in itertools.count():  # another process may hold /etc/passwd's lock a while
        try:
            with _accounts:
                done = subprocess.run(command, capture_output=True, text=True,
                                      env={"PATH": ADMIN_PATH}, timeout=30)  # fmt: skip
        except (OSError, subprocess.SubprocessError) as exc:
            raise SessionNotStarted(f"could not create the session's user {user}: {exc}") from exc
        found = _account_of(user)
        if found is not None:
            return found
        why = done.stderr.strip() or f"useradd exited with {done.returncode}"
        if done.returncode not in USERADD_BUSY or time.monotonic() > deadline:
            break
        time.sleep(min(0.2 * (attempt + 1), 2.0))
    raise SessionNotStarted(f"could not create the session's user {user}: {why}")


def _account_of(user: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(user)
    except KeyError:
        return None


def _username(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _kill_all(account: pwd.struct_passwd, python: str) -> None:
    """SIGKILL every process of the session's user, those that left the server's process group
    too: kill(-1) from a process of that user reaches exactly the processes it may signal."""
    if account.pw_uid in (0, os.geteuid()):
        return  # never: those are the portal's own
    kill = shutil.which("kill", path=SYSTEM_PATH)
    code = "import os, signal\ntry:\n    os.kill(-1, signal.SIGKILL)\nexcept OSError:\n    pass"
    command = [kill, "-KILL", "-1"] if kill else [python, "-I", "-S", "-c", code]
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(command, user=account.pw_uid, group=account.pw_gid, extra_groups=[],
                       env={}, cwd="/", capture_output=True, timeout=30, check=False)  # fmt: skip


def _unreachable(path: Path, executable: bool = False) -> str | None:
    """Why a user of neither the owner nor the group of `path` could not reach it (or run it):
    the first directory on its way, or the file behind its links, without `x` for others; None
    when nothing blocks. (Mode bits only, ACLs aside: an explanation, not a guarantee.)"""
    absolute = Path(os.path.abspath(path))
    real = Path(os.path.realpath(path))
    for folder in (*reversed(absolute.parents), *reversed(real.parents)):
        try:
            mode = os.stat(folder).st_mode
        except OSError as exc:
            return f"{folder}: {exc.strerror}"
        if not mode & 0o001:
            return f"{folder} is {stat.filemode(mode)}"
    if executable:
        try:
            mode = os.stat(real).st_mode
        except OSError as exc:
            return f"{real}: {exc.strerror}"
        if not mode & 0o001:
            return f"{real} is {stat.filemode(mode)}"
    return None


def _remove_user(account: pwd.struct_passwd) -> None:
    """Delete the session's user and what it left in the shared temporary directories."""
    if account.pw_uid in (0, os.geteuid()):
        return
    for place in SHARED_TEMP:
        with contextlib.suppress(OSError), os.scandir(place) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.stat(follow_symlinks=False).st_uid != account.pw_uid:
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        shutil.rmtree(entry.path, ignore_errors=True)
                    else:
                        os.unlink(entry.path)
    with _accounts, contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["userdel", "--force", account.pw_name], capture_output=True,
                       env={"PATH": ADMIN_PATH}, timeout=30, check=False)  # fmt: skip


def _write_private(path: Path, text: str) -> None:
    """`text` as the whole of `path`, a 0600 file of the portal's (readers never see half)."""
    partial = path.with_name(path.name + ".partial")
    partial.unlink(missing_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with open(descriptor, "w") as out:
        out.write(text)
    os.replace(partial, path)


def _open_private(path: Path):
    """`path` opened for appending, a 0600 file of the portal's (the server's log)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    os.fchmod(descriptor, 0o600)
    return open(descriptor, "ab")


def _load(path: Path) -> Session | None:
    try:
        return Session(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _terminate(pid: int, grace_s: float) -> None:
    """SIGTERM the server's process group, SIGKILL what is left after `grace_s`."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
