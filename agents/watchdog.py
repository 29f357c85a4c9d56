"""The watchdog of one local Jupyter server: prepares the session's home, runs the server, and
ends it when the portal process that started it is gone (no stray Jupyter after `make run`).

It runs as the session's user, in the session's home, from the interpreter sessions use; and it
must run wherever and however the portal is installed: a venv with `requirements.txt` only and
the project on no path (the image's /app), a tree the session's user may not read, an editable
install. So it is not imported and not run from the portal's files: `LocalSessions` reads this
file and passes its text to `python -I -c` (isolated: no PYTHON* variables, no working directory
or user site on the path), and it needs nothing but the standard library. Usage::

    python -I -c "$(cat agents/watchdog.py)" --parent PID -- COMMAND ...
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

USAGE = "usage: python -I -c SOURCE --parent PID -- COMMAND ..."


def alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie, or our own exited child, counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    else:
        with contextlib.suppress(ChildProcessError):
            done, _ = os.waitpid(pid, os.WNOHANG)  # reap our own child if it exited
            if done == pid:
                return False
    try:  # someone else's exited child waits to be reaped: a zombie is not alive
        with open(f"/proc/{pid}/stat") as stat_file:
            return stat_file.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return True


def prepare_home() -> None:
    """In the session's home (the working directory), as the session's user: the notebooks'
    folder, a temporary folder of its own, and no "get Jupyter news?" prompt (the server has no
    internet and the user came to work). Relative paths: they work wherever the home is."""
    for folder in ("work", "tmp"):
        Path(folder).mkdir(mode=0o700, exist_ok=True)
    folder = Path(".jupyter", "lab", "user-settings", "@jupyterlab", "apputils-extension")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # JupyterLab's lighter page (no build check, no language-server client: issue 24 item 1)
    # is the portal's agents/jupyter_config/labconfig/page_config.json, not the home's


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
        if not alive(parent) or os.getppid() == 1:
            child.terminate()
            try:
                return child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                return child.wait()


def main(argv: list[str]) -> int:
    """`--parent PID -- COMMAND ...` (argv without the program's name)."""
    if len(argv) < 4 or argv[0] != "--parent" or argv[2] != "--" or not argv[1].isdigit():
        print(USAGE, file=sys.stderr)
        return 2
    prepare_home()
    return watch(int(argv[1]), argv[3:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
