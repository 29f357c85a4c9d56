"""`allot bash`'s terminal: the portal's shell websocket relayed to this terminal.

Keystrokes go out as binary messages (the terminal is put in raw mode when stdin is one, so
Ctrl-C reaches the remote shell), the window size as `{"resize": [columns, rows]}`, and what the
remote terminal prints comes back as binary messages; `{"exit": code}` ends the session.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import threading

from .client import CliError


def websocket_url(portal: str, path: str) -> str:
    """ws(s)://host/path for the portal at http(s)://host."""
    scheme, _, rest = portal.rstrip("/").partition("://")
    return f"{'wss' if scheme == 'https' else 'ws'}://{rest}{path}"


@contextlib.contextmanager
def raw_terminal(fd: int):
    """Raw mode for the duration (a no-op when `fd` is not a terminal)."""
    if not os.isatty(fd):
        yield
        return
    import termios
    import tty

    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _fileno(stream) -> int:
    """The stream's file descriptor, or -1 (a BytesIO in tests)."""
    try:
        return stream.fileno()
    except (OSError, ValueError, AttributeError):
        return -1


def run_shell(portal: str, token: str, path: str, stdin=None, stdout=None) -> int:
    """Relay until the remote shell ends; its exit code (1 when unknown)."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    try:
        ws = connect(websocket_url(portal, path), origin=portal.rstrip("/"), max_size=None,
                     additional_headers={"Authorization": f"Token {token}"})  # fmt: skip
    except InvalidStatus as exc:
        raise CliError(f"the portal refused the shell (HTTP {exc.response.status_code})") from None
    except OSError as exc:
        raise CliError(f"cannot reach {portal}: {exc}") from None

    fd = _fileno(stdin)

    def keystrokes() -> None:
        with contextlib.suppress(ConnectionClosed, OSError, ValueError):
            while True:
                data = os.read(fd, 1024) if fd >= 0 else stdin.read1(1024)
                if not data:
                    return
                ws.send(data)

    code = 1
    with ws:
        columns, rows = shutil.get_terminal_size()
        ws.send(json.dumps({"resize": [columns, rows]}))
        with raw_terminal(fd) if fd >= 0 else contextlib.nullcontext():
            threading.Thread(target=keystrokes, daemon=True).start()
            with contextlib.suppress(ConnectionClosed):
                for message in ws:
                    if isinstance(message, bytes):
                        stdout.write(message)
                        stdout.flush()
                    else:
                        exit_code = json.loads(message).get("exit")
                        code = 1 if exit_code is None else int(exit_code)
    return code
