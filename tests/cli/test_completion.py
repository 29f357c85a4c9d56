"""Shell completion as docs/cli.md documents it: click's `_ALLOT_COMPLETE` mechanism."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def complete(mode: str, **env: str) -> subprocess.CompletedProcess:
    """`_ALLOT_COMPLETE=mode allot` with the extra variables `env`."""
    env = {**os.environ, "_ALLOT_COMPLETE": mode, **env}
    return subprocess.run([sys.executable, "-m", "cli"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F"),
                                               ("zsh", "#compdef allot")])  # fmt: skip
def test_the_completion_script_is_printed_for_bash_and_zsh(shell, marker):
    done = complete(f"{shell}_source")
    assert done.returncode == 0 and marker in done.stdout and "_allot_completion" in done.stdout


def test_bash_completes_command_names():
    done = complete("bash_complete", COMP_WORDS="allot su", COMP_CWORD="1")
    assert done.returncode == 0 and done.stdout.split() == ["plain,submit"]
