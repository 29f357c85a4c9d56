"""`allot limits`: list, set and unset a project's per-user limits (issue 36, R21.1-R21.3 and the
pending cap at submit), a client of /api/v1/projects/<name>/user-limits/; the project default
has no user, an override names one. A refusal reads as the API's (the field and the reason)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from .tables import show

FIELDS = ("max_gpus", "max_running", "max_pending", "max_interactive")


def limits_table(limits: list[dict]) -> Table:
    """One row per limit, the project default first; an empty field reads 'default' in an
    override (the default's value applies) and 'none' in the default (no limit)."""
    table = Table("USER", "MAX GPUS", "MAX RUNNING", "MAX PENDING", "MAX INTERACTIVE", box=None,
                  pad_edge=False)  # fmt: skip
    for limit in sorted(limits, key=lambda u: (u["user"] is not None, u["user"] or "")):
        unset = "default" if limit["user"] else "none"
        values = [unset if limit[f] is None else str(limit[f]) for f in FIELDS]
        table.add_row(limit["user"] or "(project default)", *values)
    return table


UNSET = object()  # an option not given, told apart from 'none' (clear the field)


def field_option(name: str, kind: type, what: str):
    """`--NAME`: a number, or 'none' to clear the field; left out, the field keeps its value."""
    return click.option(name, type=OrNone(kind), default=UNSET, help=f"{what}; 'none' clears it")


class OrNone(click.ParamType):
    """A number for the API as JSON (the API refuses strings), or 'none' to clear the field
    (JSON null); a value that is neither is refused naming the option."""

    def __init__(self, kind: type):
        self.kind = kind
        self.name = "NUMBER|none" if kind is float else "COUNT|none"

    def convert(self, value, param, ctx):
        if value is UNSET:  # not given: the field keeps its value
            return value
        if value is None or (isinstance(value, str) and value.lower() == "none"):
            return None
        try:
            return self.kind(value)
        except ValueError:
            what = "a number" if self.kind is float else "a whole number"
            self.fail(f"{value!r} is not {what} or 'none'", param, ctx)


def register(cli: click.Group, api, out) -> None:
    """Add the `limits` group to the CLI (`api()` makes the client, `out` prints)."""

    @cli.group()
    def limits():
        """Per-user limits inside a project: GPUs, running, pending and interactive jobs one
        user may hold (the project default, and overrides per user)."""

    def path(project: str) -> str:
        return f"projects/{project}/user-limits/"

    def find(client, project: str, user: str | None) -> dict | None:
        return next((u for u in client.all(path(project)) if u["user"] == user), None)

    @limits.command("list")
    @click.argument("project")
    @click.option("--json", "as_json", is_flag=True, help="print JSON")
    def list_(project, as_json):
        """PROJECT's per-user limits you may see (its members: the default and their own)."""
        found = api().all(path(project))
        if as_json:
            click.echo(json.dumps(found, indent=2))
        elif found:
            show(limits_table(found), out)
        else:
            click.echo(f"No per-user limits in {project}.")

    @limits.command("set")
    @click.argument("project")
    @click.option("-u", "--user", help="whose override (default: the project default)")
    @field_option("--max-gpus", float, "GPUs one user's running jobs hold")
    @field_option("--max-running", int, "running jobs per user")
    @field_option("--max-pending", int, "pending jobs per user")
    @field_option("--max-interactive", int, "running interactive sessions")
    def set_(project, user, max_gpus, max_running, max_pending, max_interactive):
        """Set PROJECT's default (or USER's override), field by field (the project's admins);
        fields not given keep their value."""
        given = {"max_gpus": max_gpus, "max_running": max_running, "max_pending": max_pending,
                 "max_interactive": max_interactive}  # fmt: skip
        body = {k: v for k, v in given.items() if v is not UNSET}
        if not body:
            raise click.UsageError(
                "give at least one of --max-gpus, --max-running, --max-pending, --max-interactive"
            )
        client = api()
        current = find(client, project, user)
        if current is None:
            made = client.call("POST", path(project), json={"user": user, **body})
        else:
            made = client.call("PATCH", f"{path(project)}{current['id']}/", json=body)
        who = f"{user}'s override" if user else "the project default"
        values = ", ".join(f"{f} {'none' if made[f] is None else made[f]}" for f in FIELDS)
        click.echo(f"Per-user limit of {project} set, {who}: {values}")

    @limits.command("unset")
    @click.argument("project")
    @click.option("-u", "--user", help="whose override (default: the project default)")
    def unset(project, user):
        """Remove PROJECT's default (or USER's override) (the project's admins)."""
        client = api()
        current = find(client, project, user)
        who = f"{user}'s override" if user else "the project default"
        if current is None:
            raise click.ClickException(f"{project} has no per-user limit for {who}")
        client.call("DELETE", f"{path(project)}{current['id']}/")
        click.echo(f"Per-user limit of {project} removed: {who}")
