"""The `k8s_lab` fixture: a real control plane (scripts/k8s-lab) with KWOK's fake GPU nodes.

A test directory that needs it imports the fixture into its conftest.py:

    from tests.k8s.lab import k8s_lab  # noqa: F401  (a fixture)

Whichever directories import it, one lab is started per test session (2 nodes x 8 GPUs, in a
temporary work directory) and stopped when the last user is done. Without the binaries the tests
are skipped with the command that builds them; under CI (`CI` set) that is a failure instead,
since .ci/run builds them first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from kubernetes import client, config

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "k8s-lab"
NODES = 2
GPUS_PER_NODE = 8


def eventually(check: Callable[[], object], what: str, timeout: float = 60) -> object:
    """Poll `check` until it returns something true; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.2)


@dataclass
class Lab:
    """A running lab: where it is, how to reach it, and what it holds."""

    dir: Path
    kubeconfig: Path
    server: str
    nodes: list[str]
    gpus_per_node: int
    api_client: client.ApiClient

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)


def lab_command(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class _Shared:
    """The one lab of this process, counted by the fixtures that use it."""

    lab: Lab | None = None
    users = 0


def _start() -> Lab:
    check = lab_command("check")
    if check.returncode:
        message = (
            "the Kubernetes lab's binaries are not built; run `scripts/k8s-lab build` "
            f"(slow the first time, then cached):\n{check.stdout}{check.stderr}"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    workdir = Path(tempfile.mkdtemp(prefix="allot-k8s-lab-"))
    args = ("--dir", str(workdir), "--nodes", str(NODES), "--gpus-per-node", str(GPUS_PER_NODE))
    started = lab_command("start", *args)
    if started.returncode:
        lab_command("stop", "--dir", str(workdir))
        pytest.fail(f"scripts/k8s-lab start failed:\n{started.stdout}{started.stderr}")
    state = json.loads((workdir / "state.json").read_text())
    kubeconfig = Path(state["kubeconfig"])
    return Lab(
        dir=workdir,
        kubeconfig=kubeconfig,
        server=state["server"],
        nodes=state["nodes"],
        gpus_per_node=state["gpus_per_node"],
        api_client=config.new_client_from_config(config_file=str(kubeconfig)),
    )


def _stop(lab: Lab) -> None:
    lab.api_client.close()
    stopped = lab_command("clean", "--dir", str(lab.dir))
    if stopped.returncode:
        sys.stderr.write(f"scripts/k8s-lab clean failed:\n{stopped.stdout}{stopped.stderr}")


@pytest.fixture(scope="session")
def k8s_lab() -> Iterator[Lab]:
    if _Shared.lab is None:
        _Shared.lab = _start()
    _Shared.users += 1
    try:
        yield _Shared.lab
    finally:
        _Shared.users -= 1
        if _Shared.users == 0:
            lab, _Shared.lab = _Shared.lab, None
            _stop(lab)
