"""An interactive shell in a job's first pod through the API server's exec stream (`allot bash`).

`open_shell` runs a shell (`bash` where the image has it, else `sh`) in the pod's main
container over the stream API (`connect_get_namespaced_pod_exec`, a websocket speaking
Kubernetes' channel protocol) with a terminal. `ExecShell` reads what the terminal prints, sends
keystrokes and window sizes, and gives the exit code when the shell ends; the portal's shell
consumer relays it to the CLI.
"""

from __future__ import annotations

import json

from kubernetes import client
from kubernetes.stream import stream
from kubernetes.stream.ws_client import (
    ERROR_CHANNEL,
    RESIZE_CHANNEL,
    STDERR_CHANNEL,
    STDOUT_CHANNEL,
)

from agents.base import JobSpec
from agents.kubernetes import manifests

SHELL = ("/bin/sh", "-c", "command -v bash >/dev/null 2>&1 && exec bash -il || exec sh -i")


class ExecShell:
    """One open exec stream (not thread-safe: one reader thread, writes from anywhere are ok)."""

    def __init__(self, ws):
        self.ws = ws

    @property
    def open(self) -> bool:
        return self.ws.is_open()

    def read(self, timeout_s: float = 0.2) -> bytes:
        """What the terminal printed since the last read (waits up to `timeout_s` for it)."""
        self.ws.update(timeout=timeout_s)
        out = b""
        for channel in (STDOUT_CHANNEL, STDERR_CHANNEL):
            data = self.ws.read_channel(channel)
            if data:
                out += data if isinstance(data, bytes) else data.encode()
        # The client also copies all output into one buffer (`capture_all`, which `stream`
        # cannot switch off); a shell may print for hours, so that copy is dropped as we go.
        self.ws._all.seek(0)
        self.ws._all.truncate()
        return out

    def write(self, data: bytes) -> None:
        """Keystrokes for the shell."""
        self.ws.write_stdin(data)

    def resize(self, columns: int, rows: int) -> None:
        """The user's terminal changed size."""
        self.ws.write_channel(RESIZE_CHANNEL, json.dumps({"Width": columns, "Height": rows}))

    @property
    def exit_code(self) -> int | None:
        """The shell's exit code once it ended (None while it runs or when unknown)."""
        if self.ws.is_open():
            return None
        status = self.ws.read_channel(ERROR_CHANNEL)
        if not status:
            return None
        body = json.loads(status if isinstance(status, str) else status.decode())
        if body.get("status") == "Success":
            return 0
        for cause in (body.get("details") or {}).get("causes") or ():
            if cause.get("reason") == "ExitCode":
                return int(cause.get("message", 1))
        return 1

    def close(self) -> None:
        self.ws.close()


def open_shell(api: client.ApiClient, job: JobSpec, command: tuple[str, ...] = SHELL,
               where: tuple[str, str, str | None] | None = None) -> ExecShell:  # fmt: skip
    """A shell in the job's first pod (raises ApiException when the API refuses). `where`:
    (namespace, pod, container) of a pod Allot did not make (an external workload's)."""
    namespace, pod, container = where or (manifests.namespace_for(job.project),
                                          manifests.pod_name(job, 0), "main")  # fmt: skip
    ws = stream(
        client.CoreV1Api(api).connect_get_namespaced_pod_exec,
        pod,
        namespace,
        container=container,
        command=list(command),
        stdin=True,
        stdout=True,
        stderr=True,
        tty=True,
        binary=True,
        _preload_content=False,
    )
    return ExecShell(ws)
