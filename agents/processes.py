"""Real processes for the simulated cluster's jobs that have a command, on this machine.

The simulated cluster has no containers, but a researcher who submits `--pods 2 -- torchrun ...`
to the embedded default expects it to run (issue 33). With `ALLOT_SIM_PROCESSES` on (`make run`
turns it on), every job with a command that is not a Jupyter session runs its pods as local
processes, one per pod, each given the rendezvous variables (`agents.rendezvous`) with
`MASTER_ADDR=127.0.0.1` and a free `MASTER_PORT`, so its pods find each other over loopback as
pods find each other through a headless Service under Kubernetes. A job's phase comes from its
pods' exit codes (all 0: Succeeded; any other: Failed, naming the pod and its code), its logs
from their output, and stopping it kills them. GPU figures stay synthetic and marked so: the
simulated nodes' devices are not this machine's, so Allot names no device to a process (it sees
whatever this machine has, usually none).

A job's command is a researcher's code, so it is isolated exactly as a notebook is
(`agents.sessions`, whose machinery this reuses): as root, a system user of the job's own in
the sessions' group, behind the firewall that closes the portal's database and broker to that
group, and deleted with every process and temporary file it left when the job stops; a home of
its own (0700, removed at stop); an environment built from nothing (no SECRET_KEY, DATABASE_URL,
...); the portal's private paths closed first. A portal that is not root refuses to run them
(the job fails saying why) unless it is one person's `make run` (`single_user`).

Each pod runs under the sessions' watchdog, which ends it when the portal process that started
it is gone. That process also waits for each pod and writes its exit code to a 0600 file of the
portal's beside the homes (never a file in the researcher's home, which the researcher could
write), so every process of the portal (the web process serving logs, the one running the
cycle) reads the same phases. A pod that ended with no code while its starter is gone was lost
with it (the job fails); a restarted portal does not run a job twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import pwd
import re
import shlex
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from agents import rendezvous
from agents.base import JobSpec, Phase
from agents.ports import free_port
from agents.sessions import (
    SYSTEM_PATH,
    USER_PREFIX,
    WATCHDOG_SOURCE,
    LocalSessions,
    SessionNotStarted,
    _account,
    _account_of,
    _kill_all,
    _make_home,
    _open_private,
    _remove_user,
    _terminate,
    _username,
    _write_private,
    session_key,
)

LOOPBACK = "127.0.0.1"
VARIABLE = re.compile(r"\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")  # `expand`


def job_user(project: str, name: str) -> str:
    """The system user a job's processes run as when the portal runs as root (never a
    session's: the digest is of another text)."""
    return USER_PREFIX + hashlib.sha256(f"job:{project}/{name}".encode()).hexdigest()[:12]


def process_environment(home: Path, user: str, job: JobSpec, rendezvous_env: dict[str, str],
                        python: str = "") -> dict[str, str]:  # fmt: skip
    """A pod's whole environment, built from nothing: a PATH that finds the portal's Python
    (`python` runs the sessions' interpreter), LANG, unbuffered Python output (the logs show
    lines as they are written), the job's own variables, then HOME, USER, TMPDIR and the
    rendezvous variables, which the job's own cannot replace (but `MASTER_PORT`, which the
    rendezvous reads). Nothing of the portal's own environment."""
    env = {"PATH": f"{Path(python or sys.executable).parent}:{SYSTEM_PATH}", "LANG": "C.UTF-8",
           "PYTHONUNBUFFERED": "1"}  # fmt: skip
    env.update({str(key): str(value) for key, value in job.environment})
    env.update({"HOME": str(home), "USER": user, "LOGNAME": user, "TMPDIR": str(home / "tmp")})
    env.update(rendezvous_env)
    return env


def expand(word: str, env: dict[str, str]) -> str:
    """`word` with each `$(NAME)` of a defined variable replaced by its value and `$$(` by
    `$(`, as the kubelet expands a container's command and arguments: the same command line
    (`--node-rank $(NODE_RANK)`) works in a pod and here, where no shell runs it."""

    def value(match: re.Match) -> str:
        if match[0].startswith("$$"):
            return match[0][1:]
        return env.get(match[1], match[0])

    return VARIABLE.sub(value, word)


@dataclass(frozen=True)
class Pods:
    """What one look at a job's processes found: its phase, why it failed, and its pods'."""

    phase: Phase
    message: str = ""
    pod_phases: tuple[Phase, ...] = ()


class LocalProcesses(LocalSessions):
    """Starts, watches and stops the local processes of jobs with a command, one per pod.

    The same arguments as `LocalSessions` (its directory must be another one: the two keep
    their files under the same names)."""

    # -- the life of a job ------------------------------------------------------------------------

    def run(self, job: JobSpec) -> None:
        """Start the job's pods unless this run of it was started already (running or ended:
        a run is never repeated); the pods of an earlier run (a move, a restart) are stopped
        first. Raises SessionNotStarted when they may not or could not start; `pods` then
        says why."""
        project, name = job.key
        with self._locked(project, name):
            described = self._description(project, name)
            if described is not None and described.get("started_at") == _stamp(job):
                return
            if described is not None:
                self._stop_locked(project, name, described, grace_s=0.5)
            try:
                self._start_pods(job)
            except SessionNotStarted as exc:
                _write_private(self._refusal(project, name), str(exc))
                raise
            self._refusal(project, name).unlink(missing_ok=True)

    def pods(self, project: str, name: str) -> Pods | None:
        """The job's phase from its pods' processes; None when it was never started here."""
        described = self._description(project, name)
        if described is None:
            try:
                refusal = self._refusal(project, name).read_text()
            except OSError:
                return None
            return Pods("Failed", f"the job's processes were not started: {refusal}")
        phases, message = [], ""
        for index, pid in enumerate(described["pids"]):
            code = self._exit_code(project, name, index, pid)
            if code is None and (_running(pid) or _running(described["starter"])):
                phases.append("Running")  # (its starter writes the code as soon as it ends)
                continue
            phases.append("Succeeded" if code == 0 else "Failed")
            if code is None:
                message = message or (f"pod {index} was lost: the portal process that started "
                                      "it ended before it")  # fmt: skip
            elif code != 0:
                message = message or f"pod {index} exited with code {code}"
        if message:
            return Pods("Failed", message, tuple(phases))
        done = all(phase == "Succeeded" for phase in phases)
        return Pods("Succeeded" if done else "Running", "", tuple(phases))

    def started_at(self, project: str, name: str) -> datetime | None:
        """When the run the job's processes belong to was started (None: unknown)."""
        described = self._description(project, name) or {}
        with contextlib.suppress(TypeError, ValueError):
            return datetime.fromisoformat(described["started_at"])
        return None

    def logs(self, project: str, name: str, tail: int = 200) -> list[str]:
        """The last `tail` lines of the job's output: pod by pod, each line after the pod's
        name when the job has several."""
        described = self._description(project, name)
        if described is None or tail <= 0:
            return []
        count = len(described["pids"])
        lines = []
        for index in range(count):
            try:
                text = self._pod_log(project, name, index).read_text(errors="replace")
            except OSError:
                continue
            prefix = f"[{name}-{index}] " if count > 1 else ""
            lines += [prefix + line for line in text.splitlines()[-tail:]]
        return lines[-tail:]

    def activity(self, project: str, name: str) -> str | None:
        """Changes whenever one of the job's pods writes output (its logs' sizes)."""
        described = self._description(project, name)
        if described is None:
            return None
        sizes = []
        for index in range(len(described["pids"])):
            with contextlib.suppress(OSError):
                sizes.append(self._pod_log(project, name, index).stat().st_size)
        return ",".join(map(str, sizes))

    def stop(self, project: str, name: str, grace_s: float = 0.5) -> bool:
        """Kill the job's pods and remove its files, its home and (as root) its user with
        every process it left; False when it had none."""
        with self._locked(project, name):
            described = self._description(project, name)
            self._refusal(project, name).unlink(missing_ok=True)
            if described is None:
                return False
            self._stop_locked(project, name, described, grace_s)
        return True

    def _stop_locked(self, project: str, name: str, described: dict, grace_s: float) -> None:
        """`stop`'s work, the job's lock held."""
        for pid in described["pids"]:
            _terminate(pid, grace_s)
        account = _account_of(described["account"]) if self.isolated else None
        if account is not None:
            _kill_all(account, self.python)
        shutil.rmtree(self._home(project, name), ignore_errors=True)
        for index in range(len(described["pids"])):
            self._pod_log(project, name, index).unlink(missing_ok=True)
            self._exit_file(project, name, index).unlink(missing_ok=True)
        self._file(project, name).unlink(missing_ok=True)
        if account is not None:
            _remove_user(account)

    def started(self) -> list[tuple[str, str]]:
        """(project, name) of every job whose processes were started and not stopped."""
        found = []
        for path in sorted(self.directory.glob("*.job.json")):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                described = json.loads(path.read_text())
                found.append((described["project"], described["name"]))
        return found

    def refusal(self) -> str | None:
        """Why no job's processes may start here, or None."""
        reason = super().refusal()
        if reason is None or self.isolated:
            return reason
        uid = os.geteuid()
        return (
            f"refusing to run a researcher's command as the portal's own user ({_username(uid)}, "
            f"uid {uid}): it could read the portal's environment, files and database. Run the "
            "portal as root, so that each job gets a system user of its own, or leave "
            "ALLOT_SIM_PROCESSES off (jobs are then simulated); only a one-person trial with "
            "`make run` may allow it (ALLOT_SESSIONS_SINGLE_USER=1)."
        )

    # -- files and processes ------------------------------------------------------------------

    def _start_pods(self, job: JobSpec) -> None:
        project, name = job.key
        reason = self.refusal()
        if reason:
            raise SessionNotStarted(reason)
        command = [*shlex.split(job.command), *job.args]
        if not command:
            raise SessionNotStarted("the job has no command to run")
        self._seal()
        gid = self._guard() if self.isolated else None
        user = job_user(project, name)
        home = self._home(project, name)
        with self._account_locked(user):
            account = _account(user, home, project, name, gid) if gid is not None else None
            _make_home(home, account)
            port = rendezvous.master_port(job, default=free_port())
            count = max(1, job.pods)
            hosts = [LOOPBACK] * count
            pids = []
            try:
                for index in range(count):
                    env = rendezvous.environment(job, index, hosts, port=port)
                    pids.append(self._spawn_pod(job, index, command, env, home, account))
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                for pid in pids:
                    _terminate(pid, 0.5)
                raise SessionNotStarted(f"the job's processes could not be started: {exc}") from exc
            described = {"project": project, "name": name, "pids": pids, "port": port,
                         "starter": os.getpid(), "account": user,
                         "started_at": _stamp(job)}  # fmt: skip
            _write_private(self._file(project, name), json.dumps(described))

    def _spawn_pod(self, job: JobSpec, index: int, command: list[str], rendezvous_env: dict,
                   home: Path, account: pwd.struct_passwd | None) -> int:  # fmt: skip
        """Start pod `index` under the watchdog; a thread of this process records its exit."""
        project, name = job.key
        user = account.pw_name if account else _username(os.geteuid())
        as_user = {"user": account.pw_uid, "group": self._sessions_gid, "extra_groups": []} if (
            account) else {}  # fmt: skip
        watchdog = [self.python, "-I", "-c", WATCHDOG_SOURCE, "--parent", str(os.getpid()), "--"]
        self._exit_file(project, name, index).unlink(missing_ok=True)
        env = process_environment(home, user, job, rendezvous_env, self.python)
        with _open_private(self._pod_log(project, name, index)) as log:
            process = subprocess.Popen(
                watchdog + [expand(word, env) for word in command],
                cwd=home,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a group of its own: the watchdog and the pod
                umask=0o077,
                **as_user,
            )
        threading.Thread(target=self._record_exit, args=(process, project, name, index),
                         daemon=True, name=f"allot-pod-{name}-{index}"[:60]).start()  # fmt: skip
        return process.pid

    def _record_exit(self, process: subprocess.Popen, project: str, name: str, index: int) -> None:
        """Wait for a pod and write its exit code (a signal's death as 128 + the signal) after
        its pid: a stopped run's pod that ends late cannot pass for the next run's (`pods`
        takes a code only after the pid it describes)."""
        code = process.wait()
        code = 128 - code if code < 0 else code
        with contextlib.suppress(OSError):
            if self._file(project, name).exists() or self._home(project, name).exists():
                _write_private(self._exit_file(project, name, index), f"{process.pid} {code}")

    def _description(self, project: str, name: str) -> dict | None:
        try:
            described = json.loads(self._file(project, name).read_text())
        except (OSError, ValueError):
            return None
        return described if isinstance(described, dict) and "pids" in described else None

    def _exit_code(self, project: str, name: str, index: int, pid: int) -> int | None:
        """Pod `index`'s exit code if the process `pid` wrote it; None otherwise."""
        try:
            written, code = self._exit_file(project, name, index).read_text().split()
            return int(code) if int(written) == pid else None
        except (OSError, ValueError):
            return None

    def _file(self, project: str, name: str) -> Path:
        return self.directory / f"{session_key(project, name)}.job.json"

    def _pod_log(self, project: str, name: str, index: int) -> Path:
        return self.directory / f"{session_key(project, name)}.{index}.log"

    def _exit_file(self, project: str, name: str, index: int) -> Path:
        return self.directory / f"{session_key(project, name)}.{index}.exit"


def _stamp(job: JobSpec) -> str | None:
    """The run's start as its description records it (None: no start time)."""
    return job.started_at.isoformat() if job.started_at is not None else None


def _running(pid: int) -> bool:
    """True while process `pid` runs, without reaping it (a pod's exit is its waiting
    thread's to collect: `os.waitpid` here would take it away and lose its code)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    try:
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False
