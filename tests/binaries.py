"""The binaries the tests build with Go (the Kubernetes lab's, Helm, Dex) may still be building.

On a new machine their first build takes about 23 minutes. `.ci/run` then builds them in the
background at the lowest CPU priority while the tests that need none of them run (those that do
are collected last: `tests/conftest.py`), and names a status file in `ALLOT_BUILD_STATUS`, where
the build's exit code appears when it ends. Whatever is about to run a built binary first waits
here; without the variable (the binaries were cached, or a developer's run) nothing waits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

WAIT_S = 90 * 60  # longer than the slowest cold build measured here, so a hung build fails


def wait_for_build(wait_s: float = WAIT_S) -> None:
    """Return once the background build has finished well; fail with its log's end if it did
    not, or if it outlasts `wait_s`."""
    status = os.environ.get("ALLOT_BUILD_STATUS")
    if not status:
        return
    path, deadline = Path(status), time.monotonic() + wait_s
    while not path.exists():
        if time.monotonic() > deadline:
            log = path.with_suffix(".log")
            pytest.fail(f"the background build of the Go binaries is still going after "
                        f"{wait_s / 60:.0f} minutes (its log: {log})")  # fmt: skip
        time.sleep(2)
    code = path.read_text().strip()
    if code != "0":
        log = path.with_suffix(".log")
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
        pytest.fail(f"the background build of the Go binaries failed (exit {code}):\n{tail}")


def needs_built_binaries(item: pytest.Item) -> bool:
    """Whether a test runs a binary built with Go: the lab's tests (`k8s`), Helm's and Dex's
    (`built`)."""
    return any(item.get_closest_marker(name) for name in ("k8s", "built"))
