"""Which of a node's devices count as held by pods Allot did not place (issue 33, R2.6).

The cluster's device plugin, not Allot, chose those pods' devices, and only their count is known
(`Node.outside_gpus`). The scheduler's snapshot and the overview's device tiles take the same
ones: the highest devices that nothing else takes."""

from __future__ import annotations

from collections.abc import Iterable


def outside_devices(gpus: int, count: int, taken: Iterable[int]) -> tuple[int, ...]:
    """`count` device indexes of a node of `gpus` that `taken` (failed devices, Allot's
    placements) leaves free, highest first; ascending."""
    taken = set(taken)
    free = [device for device in range(gpus - 1, -1, -1) if device not in taken]
    return tuple(sorted(free[:count]))
