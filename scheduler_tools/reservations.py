"""Reservations in scenario replays (issue 37, R22 in docs/reservations.md): bookings on the
scenario clock, accepted or refused by the core's own check, handed to every cycle.

A booking is `{"name", "project", "gpus", "from", "until", "pool"?, "whole_nodes"?, "cpu"?,
"memory"?, "weeks"?}`: `from`-`until` on the scenario clock (seconds), repeated `weeks` times a
week (604,800 s) apart (default once). The file's top-level `reservations` are booked before
the first step and must all be accepted; a step's `book` tries more, and `expect.booked`
(names accepted so far) and `expect.refused` (`{"name": "text in the refusal"}`) check them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from scheduler.model import Node, Reservation, Snapshot
from scheduler.quantity import QuantityError, cpu_millis, memory_bytes
from scheduler.reservations import refusal

WEEK_S = 7 * 24 * 3600
FIELDS = {"name", "project", "gpus", "from", "until", "pool", "whole_nodes", "cpu", "memory",
          "weeks"}  # fmt: skip


def parse_booking(spec, where: str, projects: set[str], fail) -> tuple[Reservation, ...]:
    """One booking's occurrences, each field checked (`fail(message)` raises naming it)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) or not spec["name"]:
        fail(f"{where}: name missing")
    unknown = set(spec) - FIELDS
    if unknown:
        fail(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if spec.get("project") not in projects:
        fail(f"{where}.project: unknown project {spec.get('project')!r}")
    gpus = spec.get("gpus")
    if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
        fail(f"{where}.gpus: expected a whole number of at least 1, got {gpus!r}")
    times = {}
    for key in ("from", "until"):
        value = spec.get(key)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            fail(f"{where}.{key}: expected a time >= 0 on the scenario clock, got {value!r}")
        times[key] = float(value)
    if times["until"] <= times["from"]:
        fail(f"{where}.until: must be after from")
    weeks = spec.get("weeks", 1)
    if not isinstance(weeks, int) or isinstance(weeks, bool) or weeks < 1:
        fail(f"{where}.weeks: expected a whole number of at least 1, got {weeks!r}")
    amounts = {}
    for key, parse in (("cpu", cpu_millis), ("memory", memory_bytes)):
        try:
            amounts[key] = None if spec.get(key) is None else parse(spec[key])
        except QuantityError as exc:
            fail(f"{where}.{key}: {exc}")
    return tuple(
        Reservation(
            name=spec["name"] if weeks == 1 else f"{spec['name']}#{week + 1}",
            project=spec["project"],
            gpus=gpus,
            start=times["from"] + week * WEEK_S,
            end=times["until"] + week * WEEK_S,
            pool=spec.get("pool"),
            whole_nodes=bool(spec.get("whole_nodes", False)),
            cpu_millis=amounts["cpu"],
            memory_bytes=amounts["memory"],
        )
        for week in range(weeks)
    )


@dataclass
class Book:
    """The bookings accepted so far and the refusals, by booking name."""

    nodes: tuple[Node, ...]
    accepted: list[Reservation] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, occurrences: tuple[Reservation, ...]) -> str | None:
        """Book every occurrence, or none: the first refusal (`field: reason`, R22.1)."""
        for occurrence in occurrences:
            found = refusal(occurrence, self.accepted, self.nodes)
            if found is not None:
                self.refused[name] = f"{found.field}: {found.reason}"
                return self.refused[name]
        self.accepted += occurrences
        self.names.append(name)
        return None

    def apply(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot with the accepted occurrences not yet over."""
        live = tuple(r for r in self.accepted if r.end > snapshot.now)
        if live == snapshot.reservations:
            return snapshot
        return dataclasses.replace(snapshot, reservations=live)

    def check(self, expect: dict, step: int) -> list[str]:
        """`booked` (the names accepted so far) and `refused` (text in each refusal)."""
        failures = []
        if "booked" in expect and sorted(expect["booked"]) != sorted(self.names):
            failures.append(f"step {step}: booked {self.names}, want {expect['booked']}")
        for name, text in expect.get("refused", {}).items():
            got = self.refused.get(name)
            if got is None or text not in got:
                failures.append(f"step {step}: refusal of {name} is {got!r}, want {text!r} in it")
        return failures
