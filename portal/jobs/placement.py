"""`Job.placement`: where a job's pods run, as stored JSON, encoded and decoded here only.

One entry per pod: `{"node": "dgx1-1", "devices": [0, 1], "share": 1.0}` (`share` < 1 for a
fraction of one device). The cycle's commit writes it from the plan; the snapshot reads it back
for the scheduler, the agent glue for the cluster, and the pages and the API for people.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple, Protocol


class Pod(NamedTuple):
    """One pod's place: a node, the device indexes it holds, its share of each device."""

    node: str
    devices: tuple[int, ...]
    share: float


class Placed(Protocol):
    """Anything that says where a pod runs (the scheduler's PodPlacement, the agent's PodSpec)."""

    node: str
    devices: tuple[int, ...]
    share: float


def encode(pods: Iterable[Placed]) -> list[dict]:
    """The JSON stored in `Job.placement` for `pods`, in pod order."""
    return [{"node": pod.node, "devices": list(pod.devices), "share": pod.share} for pod in pods]


def decode(stored: list[dict] | None) -> tuple[Pod, ...]:
    """The pods of a stored placement, in pod order (none for an empty or missing one)."""
    return tuple(
        Pod(entry["node"], tuple(entry.get("devices", ())), float(entry.get("share", 1.0)))
        for entry in stored or ()
    )
