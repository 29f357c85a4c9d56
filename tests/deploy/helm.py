"""Helm for the chart's tests: the binary scripts/helm runs (built from scripts/k8s-lab.d/helm/
into the lab's cache), and the chart rendered into documents."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.binaries import wait_for_build

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "allot"
LAB = ROOT / "scripts" / "k8s-lab"


def helm_binary() -> str:
    """The cached Helm; skipped without it (the build is minutes), failed under CI (`CI` set),
    since .ci/run builds it with the lab's binaries."""
    wait_for_build()
    check = subprocess.run(
        [sys.executable, str(LAB), "check"], capture_output=True, text=True, check=False
    )
    line = next((x for x in check.stdout.splitlines() if x.startswith("helm ")), "")
    if "cached" not in line.split(":")[-1]:
        message = f"Helm is not built; run `scripts/k8s-lab build helm`:\n{check.stdout}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    path = subprocess.run(
        [sys.executable, str(LAB), "binary", "helm"], capture_output=True, text=True, check=True
    )
    return path.stdout.strip()


def helm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [helm_binary(), *args], capture_output=True, text=True, check=False, timeout=120
    )


def render(*options: str, release: str = "allot", namespace: str = "allot-system") -> list[dict]:
    """`helm template` of the chart with `options` (--set ...), as documents."""
    done = helm("template", release, str(CHART), "--namespace", namespace, *options)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]
