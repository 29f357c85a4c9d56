"""Real Jupyter servers for the simulated cluster's interactive jobs, on this machine.

The simulated cluster has no containers, but a researcher who launches Jupyter expects a working
notebook. For each interactive job that asks for port 8888 the simulated agent starts a local
JupyterLab (`jupyter lab` from the installed package) bound to 127.0.0.1 on a free port, with a
random token and its base URL set to the portal's proxy path (`/sessions/{project}/{name}/`),
so every link it writes goes back through the portal. The token never leaves the portal: the
proxy adds it to each request, so the server is useless to anyone who reaches the port without
going through the portal's login and project check.

Each server runs under a small watchdog (`python -m agents.sessions --parent PID -- COMMAND`) that
ends it when the portal process that started it is gone, so stopping `make run` leaves no stray
Jupyter behind; the next cycle of a new portal process starts again the sessions the database
still holds.

A session is described by a small JSON file in `directory` (port, token, pid), written when the
server starts and removed when it stops, so every process of the portal on this machine (the web
process that proxies, the one that runs the cycle) sees the same sessions, and starting twice
does not start two servers (an exclusive lock per session).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

JUPYTER_PORT = 8888


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


class LocalSessions:
    """Starts, finds and stops local JupyterLab servers, one per (project, job name)."""

    def __init__(self, directory: Path, command: tuple[str, ...] | None = None):
        self.directory = Path(directory)
        self.command = command or (sys.executable, "-m", "jupyterlab")

    # -- the life of a session -------------------------------------------------------------------

    def start(self, project: str, name: str) -> Session:
        """Start the job's server unless it runs already; its description either way."""
        with self._locked(project, name):
            running = self._read(project, name)
            if running is not None and _alive(running.pid):
                return running
            return self._spawn(project, name)

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

    def failure(self, project: str, name: str) -> str | None:
        """Why the job's server is gone when it was started and has exited (its last log line),
        else None."""
        session = self._read(project, name)
        if session is None or _alive(session.pid):
            return None
        try:
            lines = (self._home(project, name) / "jupyter.log").read_text(errors="replace")
        except OSError:
            lines = ""
        last = [line for line in lines.splitlines() if line.strip()][-1:] or ["no output"]
        return f"the Jupyter server exited: {last[0][-300:]}"

    def stop(self, project: str, name: str, grace_s: float = 0.5) -> bool:
        """Stop the job's server and remove its files; False when there was none."""
        with self._locked(project, name):
            session = self._read(project, name)
            self._file(project, name).unlink(missing_ok=True)
            shutil.rmtree(self._home(project, name), ignore_errors=True)
        if session is None:
            return False
        _terminate(session.pid, grace_s)
        return True

    def all(self) -> list[Session]:
        """Every session with a live server."""
        found = []
        for path in sorted(self.directory.glob("*.json")):
            session = _load(path)
            if session is not None and _alive(session.pid):
                found.append(session)
        return found

    # -- files and processes -----------------------------------------------------------------

    def _spawn(self, project: str, name: str) -> Session:
        home = self._home(project, name)
        home.mkdir(parents=True, exist_ok=True)
        port, token, base_url = _free_port(), secrets.token_hex(24), session_path(project, name)
        _quiet_settings(home)
        log = open(home / "jupyter.log", "ab")  # noqa: SIM115 (the child keeps it open)
        env = dict(os.environ, JUPYTER_TOKEN=token, HOME=str(home),
                   JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
                   JUPYTER_RUNTIME_DIR=str(home / ".runtime"))  # fmt: skip
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agents.sessions",
                "--parent",
                str(os.getpid()),
                "--",
                *self.command,
                "--no-browser",
                "--ip=127.0.0.1",
                f"--port={port}",
                f"--ServerApp.base_url={base_url}",
                f"--ServerApp.root_dir={home / 'work'}",
                "--ServerApp.allow_remote_access=True",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                "--ServerApp.terminals_enabled=False",
                *(["--allow-root"] if os.geteuid() == 0 else []),
            ],
            cwd=home,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip (a process group of its own: the watchdog below and the server)
        log.close()
        (home / "work").mkdir(exist_ok=True)
        session = Session(project, name, port, token, process.pid, base_url)
        self._file(project, name).write_text(json.dumps(session.__dict__))
        return session

    def _read(self, project: str, name: str) -> Session | None:
        return _load(self._file(project, name))

    def _file(self, project: str, name: str) -> Path:
        return self.directory / f"{project}--{name}.json"

    def _home(self, project: str, name: str) -> Path:
        return self.directory / f"{project}--{name}"

    @contextlib.contextmanager
    def _locked(self, project: str, name: str):
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / f"{project}--{name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def _quiet_settings(home: Path) -> None:
    """No "get Jupyter news?" prompt: the server has no internet and the user came to work."""
    folder = home / ".jupyter" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


def _load(path: Path) -> Session | None:
    try:
        return Session(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)  # reap our own child if it exited
        if done == pid:
            return False
    try:  # someone else's exited child waits to be reaped: a zombie is not alive
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


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


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def watch(parent: int, command: list[str], poll_s: float = 1.0) -> int:
    """Run `command` while process `parent` lives; end it (SIGTERM, then SIGKILL) when the
    parent is gone; exit with the command's status when it ends by itself."""
    child = subprocess.Popen(command)
    signal.signal(signal.SIGTERM, lambda *_: (child.terminate(), sys.exit(143)))
    while True:
        try:
            return child.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            pass
        if not _alive(parent) or os.getppid() == 1:
            child.terminate()
            try:
                return child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                return child.wait()


if __name__ == "__main__":
    _, flag, parent_pid, separator, *rest = sys.argv
    if flag != "--parent" or separator != "--" or not rest:
        sys.exit("usage: python -m agents.sessions --parent PID -- COMMAND ...")
    sys.exit(watch(int(parent_pid), rest))
