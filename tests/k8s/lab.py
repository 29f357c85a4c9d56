"""The `k8s_lab` fixture: a real control plane (scripts/k8s-lab) with KWOK's fake GPU nodes.

A test directory that needs it imports the fixture into its conftest.py:

    from tests.k8s.lab import k8s_lab  # noqa: F401  (a fixture)

Whichever directories import it, one lab is started per test session (2 nodes x 8 GPUs and the
JobSet controller, in a temporary work directory) and stopped when the last user is done. A Job's
pod labelled KEEP_RUNNING_LABEL stays Running until deleted (KWOK finishes the others at once).
Without the binaries the tests are skipped with the command that builds them; under CI (`CI`
set) that is a failure instead, since .ci/run builds them first.
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

from tests.binaries import wait_for_build

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "k8s-lab"
NODES = 2
GPUS_PER_NODE = 8
# A Job's pod with this label stays Running until deleted (scripts/k8s-lab, KWOK's stages).
KEEP_RUNNING_LABEL = "allot.io/lab-keep-running"


def eventually(
    check: Callable[[], object], what: str, timeout: float = 60, every: float = 0.2
) -> object:
    """Poll `check` every `every` seconds until it returns something true; fail after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


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
    """Run `scripts/k8s-lab` with `args`, once its binaries are built (tests/binaries.py)."""
    wait_for_build()
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def start_lab(prefix: str, *options: str) -> tuple[Path, dict]:
    """Start a lab in a new temporary directory named `prefix`... with `scripts/k8s-lab start`
    `options`; (its directory, its state.json). Without the binaries: skipped with the command
    that builds them, or failed under CI (`CI` set), since .ci/run builds them first."""
    check = lab_command("check")
    if check.returncode:
        message = (
            "the Kubernetes lab's binaries are not built; run `scripts/k8s-lab build` "
            f"(slow the first time, then cached):\n{check.stdout}{check.stderr}"
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    workdir = Path(tempfile.mkdtemp(prefix=prefix))
    started = lab_command("start", "--dir", str(workdir), *options)
    if started.returncode:
        lab_command("clean", "--dir", str(workdir))
        pytest.fail(f"scripts/k8s-lab start failed:\n{started.stdout}{started.stderr}")
    return workdir, json.loads((workdir / "state.json").read_text())


def stop_lab(lab: Lab) -> None:
    """Close the lab's client, stop its processes and remove its directory."""
    lab.api_client.close()
    stopped = lab_command("clean", "--dir", str(lab.dir))
    if stopped.returncode:
        sys.stderr.write(f"scripts/k8s-lab clean failed:\n{stopped.stdout}{stopped.stderr}")


class SharedLab:
    """One lab per test session, started by `start` for the first fixture that asks and
    stopped when the last one is done, however many test directories use it."""

    def __init__(self, start: Callable[[], Lab]):
        self.start, self.lab, self.users = start, None, 0

    def use(self) -> Iterator[Lab]:
        if self.lab is None:
            self.lab = self.start()
        self.users += 1
        try:
            yield self.lab
        finally:
            self.users -= 1
            if self.users == 0:
                lab, self.lab = self.lab, None
                stop_lab(lab)


def _start() -> Lab:
    workdir, state = start_lab(
        "allot-k8s-lab-",
        *("--nodes", str(NODES), "--gpus-per-node", str(GPUS_PER_NODE)),
        "--jobset",  # JobSet's CRD, controller and webhooks, for the workloads users bring
    )
    kubeconfig = Path(state["kubeconfig"])
    return Lab(
        dir=workdir,
        kubeconfig=kubeconfig,
        server=state["server"],
        nodes=state["nodes"],
        gpus_per_node=state["gpus_per_node"],
        api_client=config.new_client_from_config(config_file=str(kubeconfig)),
    )


_SHARED = SharedLab(_start)


@pytest.fixture(scope="session")
def k8s_lab() -> Iterator[Lab]:
    yield from _SHARED.use()
