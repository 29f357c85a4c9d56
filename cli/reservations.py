"""`allot reservations`: list, book and cancel reservations (issue 37, R22), a client of
/api/v1/reservations/; a refusal reads as the API's (the field and the reason)."""

from __future__ import annotations

import json

import click
from rich.table import Table

from .tables import show


def _when(stamp: str) -> str:
    """'2026-12-01T14:00:00+01:00' -> '2026-12-01 14:00'."""
    return stamp[:16].replace("T", " ")


def reservations_table(bookings: list[dict]) -> Table:
    """One row per booking: its project, GPUs and where, its next slot and whether it repeats."""
    table = Table("NAME", "PROJECT", "GPUS", "POOL", "NEXT SLOT", "REPEATS", box=None,
                  pad_edge=False)  # fmt: skip
    for b in bookings:
        slots = b["next_occurrences"]
        nxt = f"{_when(slots[0]['start'])} to {_when(slots[0]['end'])}" if slots else "none ahead"
        what = f"{b['gpus']}" + (" (whole nodes)" if b["whole_nodes"] else "")
        repeats = "weekly" + (f" until {_when(b['repeat_until'])}" if b["repeat_until"] else "")
        table.add_row(b["name"], b["project"], what, b["pool"] or "any", nxt,
                      repeats if b["weekly"] else "once")  # fmt: skip
    return table


def register(cli: click.Group, api, out) -> None:
    """Add the `reservations` group to the CLI (`api()` makes the client, `out` prints)."""

    @cli.group(invoke_without_command=True)
    @click.option("--json", "as_json", is_flag=True, help="print JSON")
    @click.pass_context
    def reservations(ctx, as_json):
        """GPUs booked ahead for a project (R22): without a subcommand, the bookings you may
        see with their next slot."""
        if ctx.invoked_subcommand is not None:
            return
        bookings = api().all("reservations/")
        if as_json:
            click.echo(json.dumps(bookings, indent=2))
        elif bookings:
            show(reservations_table(bookings), out)
        else:
            click.echo("No reservations.")

    @reservations.command("book")
    @click.argument("name")
    @click.option("-p", "--project", required=True, help="the project the GPUs are for")
    @click.option("-g", "--gpus", type=int, required=True, help="whole GPUs")
    @click.option("--start", required=True, help="2026-12-01T14:00 (the portal's time zone)")
    @click.option("--end", required=True, help="2026-12-01T17:00")
    @click.option("--pool", default="", help="the node pool (default: any)")
    @click.option("--whole-nodes", is_flag=True, help="as whole nodes of the pool")
    @click.option("--weekly", is_flag=True, help="again every week")
    @click.option("--until", "repeat_until", help="a weekly booking's last start, exclusive")
    @click.option("--cpu", help="CPU in all: 16, 500m")
    @click.option("--memory", help="memory in all: 64Gi")
    def book(name, project, gpus, start, end, pool, whole_nodes, weekly, repeat_until, cpu,
             memory):  # fmt: skip
        """Book GPUS for PROJECT from START to END (cluster admins; a project's admins within
        the portal's policy); refused with the reason when the pool cannot hold it."""
        body = {"name": name, "project": project, "gpus": gpus, "start": start, "end": end,
                "pool": pool, "whole_nodes": whole_nodes, "weekly": weekly,
                "repeat_until": repeat_until, "cpu": cpu, "memory": memory}  # fmt: skip
        body = {k: v for k, v in body.items() if v is not None}
        made = api().call("POST", "reservations/", json=body)
        slots = made["next_occurrences"]
        first = f", first slot {_when(slots[0]['start'])}" if slots else ""
        click.echo(f"Reservation {made['name']} booked: {made['gpus']} GPUs for "
                   f"{made['project']}{first}")  # fmt: skip

    @reservations.command("cancel")
    @click.argument("name")
    def cancel(name):
        """Cancel the booking NAME."""
        client = api()
        found = [b for b in client.all("reservations/") if b["name"] == name]
        if not found:
            raise click.ClickException(f"no reservation named {name}")
        client.call("DELETE", f"reservations/{found[0]['id']}/")
        click.echo(f"Reservation {name} cancelled")
