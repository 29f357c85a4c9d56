"""Where the CLI finds the portal and its token: ALLOT_URL / ALLOT_TOKEN, else the config file
written by `allot login` (mode 0600 in the user's config directory), plus the default project."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import click

APP = "allot"


def config_path() -> Path:
    """The config file: $ALLOT_CONFIG, else allot/config.json in the user's config directory."""
    override = os.environ.get("ALLOT_CONFIG")
    return Path(override) if override else Path(click.get_app_dir(APP)) / "config.json"


def read() -> dict:
    """The stored settings ({} when there are none or the file is unreadable)."""
    try:
        return json.loads(config_path().read_text())
    except (OSError, ValueError):
        return {}


def write(values: dict) -> Path:
    """Merge `values` into the config file, readable by its owner only (0600)."""
    path = config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {**read(), **values}
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2)
    os.chmod(path, 0o600)
    return path


def forget(*keys: str) -> Path:
    """Remove `keys` from the config file (the rest stays)."""
    kept = {key: value for key, value in read().items() if key not in keys}
    path = config_path()
    if path.exists():
        path.unlink()
    return write(kept)


@dataclass(frozen=True)
class Settings:
    """The portal URL, the token and the default project in force."""

    url: str | None
    token: str | None
    project: str | None


def current() -> Settings:
    """Environment first, then the config file."""
    stored = read()
    return Settings(
        url=os.environ.get("ALLOT_URL") or stored.get("url"),
        token=os.environ.get("ALLOT_TOKEN") or stored.get("token"),
        project=os.environ.get("ALLOT_PROJECT") or stored.get("project"),
    )
