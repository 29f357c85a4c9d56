"""`allot what-if`: what a change would do before making it (issue 37), a client of
POST /api/v1/what-if/ (cluster admins). Repeatable flags build the list of changes, in the
order given by kind; a refusal reads as the API's (the field and the reason)."""

from __future__ import annotations

import json
from datetime import datetime

import click
from rich.table import Table

from .tables import show

NODE_FLAGS = ("cordon", "drain", "uncordon", "remove")


def _pair(text: str, flag: str) -> tuple[str, float | None]:
    """'team-a=8' -> ('team-a', 8.0); 'team-a=none' -> ('team-a', None) for a weight or limit."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise click.BadParameter(f"{text!r} is not PROJECT=VALUE", param_hint=f"--{flag}")
    if value.lower() == "none" and flag != "quota":
        return name, None
    try:
        return name, float(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a number of GPUs",
                                 param_hint=f"--{flag}") from None  # fmt: skip


def changes_of(options: dict) -> list[dict]:
    """The API's changes from the command line's flags."""
    changes = []
    for kind in ("quota", "weight", "limit"):
        for text in options[kind]:
            project, value = _pair(text, kind)
            changes.append({"kind": kind, "project": project, kind: value})
    for kind in NODE_FLAGS:
        changes += [{"kind": kind, "node": node} for node in options[kind]]
    return changes


def _when(stamp: str | None, now: str) -> str:
    """A start as 'now' or '+1h25m' from the answer's clock; '-' when none."""
    if stamp is None:
        return "-"
    seconds = (datetime.fromisoformat(stamp) - datetime.fromisoformat(now)).total_seconds()
    if seconds < 60:
        return "now"
    hours, minutes = divmod(round(seconds / 60), 60)
    return f"+{hours}h{minutes:02d}m" if hours else f"+{minutes}m"


def starts_table(answer: dict) -> Table:
    """One row per project: its pending jobs (and those the change stops), its first and last
    expected start without and with the change."""
    now = answer["now"]
    table = Table("PROJECT", "PENDING", "STOPPED", "FIRST", "FIRST AFTER", "ALL", "ALL AFTER",
                  box=None, pad_edge=False)  # fmt: skip
    for p in answer["projects"]:
        if not p["pending"] and not p["stopped"]:
            continue
        b, a = p["before"], p["after"]
        starts = (_when(b["first"], now), _when(a["first"], now), _when(b["last"], now),
                  _when(a["last"], now))  # fmt: skip
        table.add_row(p["project"], str(p["pending"]), str(p["stopped"]), *starts)
    return table


def register(cli: click.Group, api, out) -> None:
    """Add `what-if` to the CLI (`api()` makes the client, `out` prints)."""

    @cli.command("what-if")
    @click.option("--quota", multiple=True, metavar="PROJECT=GPUS", help="a project's quota")
    @click.option("--weight", multiple=True, metavar="PROJECT=W", help="over-quota weight")
    @click.option("--limit", multiple=True, metavar="PROJECT=GPUS", help="a limit (or none)")
    @click.option("--cordon", multiple=True, metavar="NODE", help="takes no new jobs")
    @click.option("--drain", multiple=True, metavar="NODE", help="cordoned, its jobs stopped")
    @click.option("--uncordon", multiple=True, metavar="NODE", help="takes jobs again")
    @click.option("--remove", multiple=True, metavar="NODE", help="leaves the cluster")
    @click.option("--hours", type=float, default=6.0, show_default=True, help="how far ahead")
    @click.option("--json", "as_json", is_flag=True, help="print the API's answer")
    def what_if(hours, as_json, **options):
        """Preview changes (cluster admins): each project's expected starts without and with
        them, and the jobs they would stop now. Nothing is changed.

        allot what-if --quota team-a=8 --drain node-3"""
        changes = changes_of(options)
        if not changes:
            raise click.UsageError("give at least one change (--quota, --drain, ...)")
        answer = api().call("POST", "what-if/", json={"changes": changes, "hours": hours})
        if as_json:
            click.echo(json.dumps(answer, indent=2))
            return
        show(starts_table(answer), out)
        stopped = answer["preempted"]
        click.echo(f"\nStopped now: {len(stopped)} job(s)")
        for job in stopped:
            click.echo(f"  {job['project']}/{job['job']}: {job['reason']}")
