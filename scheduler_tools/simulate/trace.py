"""Reading job traces, quota files and cluster shapes for the simulator.

Trace CSV columns: ``job_id, submit_time_s, duration_s, gpus, pods, team, user, status``; extra
columns are ignored except ``image`` and ``estimate_s`` when present (the predictor uses them).
An empty field means unknown:

- no ``team`` (Alibaba openb): every job goes to one team, ``all`` (``--team-column qos`` groups
  by another column instead);
- no ``user`` / ``image``: the predictor skips the groups that need them;
- no ``submit_time_s`` or ``duration_s``: the job cannot be replayed and is skipped (counted).

**Time compression.** ``--time-scale F`` multiplies every submit time by ``F`` (durations are
kept): ``F = 0.25`` makes the same jobs arrive four times as fast, for contention on a cluster
the trace alone would not fill (Alibaba openb peaks at about 65 GPUs).

**Gangs (R6.1).** With ``pods`` empty, a job asking at most one node's GPUs is one pod; a larger
one (Philly has up to 48 GPUs on 8-GPU nodes) becomes a gang of ``p`` equal pods, ``p`` the
smallest count >= ceil(gpus / GPUs per node) that divides the GPU count, so the gang asks for
exactly its GPUs (16 -> 2 x 8, 12 -> 2 x 6, 20 -> 4 x 5). With ``pods`` given, each pod asks
``gpus / pods``. A job no node set can hold simply never starts (reported as unfinished).

**Quotas.** ``philly_vc_quota.csv`` has ``team, nodes, gpus``; a team's quota is its node count,
scaled by ``--vc-scale`` (rounded half up, at least one node), times the simulated GPUs per node.
Teams of the trace that the file does not list get quota 0: under fair share they only borrow
idle GPUs (R2.3, E2); confined to their quota they never run.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

from scheduler.model import Node

DEFAULT_TEAM = "all"


@dataclass(frozen=True, slots=True)
class TraceJob:
    """One job of a trace: `pods` pods of `gpus_per_pod` GPUs each, submitted at `submit_s`,
    running `duration_s` seconds once started. `requested_gpus` is the per-pod request before
    ``--round-up-fractions`` (for the true-demand figures)."""

    index: int
    job_id: str
    submit_s: float
    duration_s: float
    gpus_per_pod: float
    pods: int
    team: str
    user: str = ""
    image: str = ""
    estimate_s: float | None = None
    requested_gpus: float = 0.0

    @property
    def gpus(self) -> float:
        """GPUs of the whole job."""
        return self.gpus_per_pod * self.pods


@dataclass
class Trace:
    """The jobs that can be replayed (sorted by submit time) and how many rows were skipped."""

    jobs: list[TraceJob]
    skipped: int = 0
    path: str = ""

    @property
    def teams(self) -> list[str]:
        """Teams in order of first submission."""
        return list(dict.fromkeys(job.team for job in self.jobs))


def split_gang(gpus: float, pods: int | None, node_gpus: int) -> tuple[int, float]:
    """(pods, GPUs per pod) for a job asking `gpus` in total (see the module doc, R6.1)."""
    if pods is not None and pods >= 1:
        return pods, gpus / pods
    if gpus <= node_gpus or node_gpus <= 0:
        return 1, gpus
    whole = math.ceil(gpus)
    count = math.ceil(whole / node_gpus)
    while whole % count:
        count += 1
    return count, whole / count


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    text = text.strip()
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def read_trace(
    path: str | Path,
    node_gpus: int = 8,
    round_up_fractions: bool = False,
    team_column: str = "team",
    limit: int | None = None,
    time_scale: float = 1.0,
) -> Trace:
    """Read a trace CSV into replayable jobs sorted by (submit time, row order).

    `round_up_fractions` turns every fractional pod request into one whole GPU (the
    no-GPU-sharing baseline for R5.4); `limit` keeps only the first jobs by submit time;
    `time_scale` multiplies every submit time (not the durations) to compress arrivals.
    """
    if not 0 < time_scale < math.inf:  # also rejects nan
        raise ValueError(f"time_scale must be a positive number, not {time_scale!r}")
    jobs: list[TraceJob] = []
    skipped = 0
    seen: dict[str, int] = {}
    with open(path, newline="") as handle:
        for row_number, row in enumerate(csv.DictReader(handle)):
            submit = _float(row.get("submit_time_s"))
            duration = _float(row.get("duration_s"))
            gpus = _float(row.get("gpus"))
            if submit is None or duration is None or gpus is None or duration < 0 or gpus < 0:
                skipped += 1
                continue
            pods_field = _float(row.get("pods"))
            pods, per_pod = split_gang(gpus, int(pods_field) if pods_field else None, node_gpus)
            requested = per_pod
            if round_up_fractions and 0 < per_pod < 1:
                per_pod = 1.0
            job_id = (row.get("job_id") or "").strip() or f"row-{row_number}"
            if job_id in seen:  # keep names unique: they are the scheduler's job keys
                seen[job_id] += 1
                job_id = f"{job_id}#{seen[job_id]}"
            else:
                seen[job_id] = 0
            team = (row.get(team_column) or "").strip() or DEFAULT_TEAM
            estimate = _float(row.get("estimate_s"))
            jobs.append(
                TraceJob(
                    index=row_number,
                    job_id=job_id,
                    submit_s=submit * time_scale,
                    duration_s=duration,
                    gpus_per_pod=per_pod,
                    pods=pods,
                    team=team,
                    user=(row.get("user") or "").strip(),
                    image=(row.get("image") or "").strip(),
                    estimate_s=estimate if estimate and estimate > 0 else None,
                    requested_gpus=requested,
                )
            )
    jobs.sort(key=lambda job: (job.submit_s, job.index))
    if limit is not None:
        jobs = jobs[:limit]
    return Trace(jobs=jobs, skipped=skipped, path=str(path))


@dataclass(frozen=True)
class VcQuota:
    """A team's quota: `nodes` (after scaling) and the GPUs they hold."""

    team: str
    nodes: int
    gpus: float


def scale_nodes(nodes: int, scale: float) -> int:
    """A VC's node count times `scale`, rounded half up, at least one node for a non-empty VC."""
    if nodes <= 0:
        return 0
    return max(1, math.floor(nodes * scale + 0.5))


def read_quotas(path: str | Path, node_gpus: int = 8, scale: float = 1.0) -> dict[str, VcQuota]:
    """Per-team quotas from a ``team, nodes[, gpus]`` CSV: scaled nodes x GPUs per node.

    A file with only ``team, gpus`` is read as GPU quotas, scaled (no node rounding)."""
    quotas: dict[str, VcQuota] = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            team = (row.get("team") or "").strip()
            if not team:
                continue
            nodes = _float(row.get("nodes"))
            if nodes is not None:
                scaled = scale_nodes(int(nodes), scale)
                quotas[team] = VcQuota(team, scaled, float(scaled * node_gpus))
            else:
                gpus = _float(row.get("gpus")) or 0.0
                quotas[team] = VcQuota(team, 0, gpus * scale)
    return quotas


_SHAPE = re.compile(r"^\s*(\d+)\s*[xX]\s*(\d+)\s*$")


def parse_nodes(text: str) -> tuple[int, int]:
    """``"352x8"`` -> (352 nodes, 8 GPUs each)."""
    match = _SHAPE.match(text)
    if not match:
        raise ValueError(f"--nodes wants COUNTxGPUS such as 352x8, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def build_nodes(count: int, gpus: int, pools: list[tuple[str, int]] | None = None) -> tuple:
    """`count` nodes of `gpus` GPUs named n00000...; with `pools`, the first nodes go to each
    (pool, node count) in turn and the rest to pool ``default``."""
    names = [f"n{i:05d}" for i in range(count)]
    assigned: list[str] = []
    for pool, nodes in pools or ():
        assigned += [pool] * nodes
    if len(assigned) > count:
        raise ValueError(f"the partition needs {len(assigned)} nodes, the cluster has {count}")
    assigned += ["default"] * (count - len(assigned))
    return tuple(Node(name, gpus, pool=pool) for name, pool in zip(names, assigned, strict=True))
