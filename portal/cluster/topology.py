"""Node labels and topology levels as the portal stores and checks them (issue 38, R23.1).

Label keys and values follow Kubernetes' syntax (an optional DNS-subdomain prefix and "/", then a
name of at most 63 characters; a value of at most 63, possibly empty), so what an admin types
for the simulated cluster is what a real cluster could carry. A job names a level by its label
key or by its short name (the part after the last "/"), as the scheduling core resolves it.
"""

from __future__ import annotations

import re

from portal.cluster.models import Node, PoolTopology

NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
PREFIX = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
MAX_LEVELS = 8


def key_problem(key: str) -> str | None:
    """Why `key` is not a Kubernetes label key, or None."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and not (len(prefix) <= 253 and PREFIX.fullmatch(prefix)):
        return f"{key!r}: the prefix before '/' must be a DNS subdomain such as example.com"
    if len(name) > 63 or not NAME.fullmatch(name):
        return (
            f"{key!r}: a label name is at most 63 letters, digits, '-', '_' or '.', beginning "
            "and ending with a letter or digit"
        )
    return None


def value_problem(value: str) -> str | None:
    """Why `value` is not a Kubernetes label value, or None (empty is allowed)."""
    if value and (len(value) > 63 or not NAME.fullmatch(value)):
        return (
            f"{value!r}: a label value is at most 63 letters, digits, '-', '_' or '.', beginning "
            "and ending with a letter or digit"
        )
    return None


def short(key: str) -> str:
    """A level's short name ("example.com/rack" -> "rack"), as scheduler.topology has it."""
    return key.rsplit("/", 1)[-1]


def known_levels() -> dict[str, str]:
    """Every name a job may give a level by (label key and short name) -> the pools it is in."""
    names: dict[str, set[str]] = {}
    for pool, levels in PoolTopology.objects.values_list("pool", "levels"):
        for key in levels:
            for name in (key, short(key)):
                names.setdefault(name, set()).add(pool)
    return {name: ", ".join(sorted(pools)) for name, pools in names.items()}


def landed_in(pool_levels: list[str], labels: list[dict]) -> str:
    """The narrowest level whose label all of a job's nodes share, in words ("rack r3"), or ""
    (R23.1: what the job page shows)."""
    for key in reversed(pool_levels):
        values = {node.get(key) for node in labels}
        if len(values) == 1 and None not in values:
            return f"{short(key)} {values.pop()}"
    return ""


def landing(nodes: list[str], cache: dict) -> str:
    """The narrowest domain holding every node of a placement ("rack r3"), or "" (no nodes,
    nodes of several pools, or no level they share). `cache` keeps the node labels and the
    pools' levels for one request or page: two queries however many jobs are shown."""
    if not nodes:
        return ""
    if "node_labels" not in cache:
        rows = Node.objects.values_list("name", "pool", "labels")
        cache["node_labels"] = {name: (pool, labels or {}) for name, pool, labels in rows}
        cache["pool_levels"] = dict(PoolTopology.objects.values_list("pool", "levels"))
    found = [cache["node_labels"].get(name) for name in nodes]
    pools = {row[0] for row in found if row is not None}
    if None in found or len(pools) != 1:
        return ""
    return landed_in(cache["pool_levels"].get(pools.pop(), []), [row[1] for row in found])


def constraint(required: str, preferred: str) -> dict[str, str]:
    """A job's `topology` from a default's two levels ("" for none), {} when both are empty."""
    return {kind: level for kind, level in (("required", required), ("preferred", preferred))
            if level}  # fmt: skip


def pool_defaults() -> tuple[dict[str, dict[str, str]], set[str]]:
    """(each pool's default constraint, every pool a node is in): read once per request, as a
    batch of submissions asks for the same."""
    rows = PoolTopology.objects.values_list("pool", "default_required", "default_preferred")
    defaults = {pool: constraint(required, preferred) for pool, required, preferred in rows}
    return defaults, set(Node.objects.values_list("pool", flat=True).distinct())


def default_for(project, defaults: tuple[dict[str, dict[str, str]], set[str]]) -> dict[str, str]:
    """The constraint a gang of `project` gets when its submission names none (issue 38): the
    project's own default; else its pools' (those it names, or every pool) when they all give
    the same one - a gang that may land in pools with different defaults gets none, as no one
    of them can be said to be where it runs; else none."""
    own = constraint(project.default_topology_required, project.default_topology_preferred)
    if own:
        return own
    by_pool, every_pool = defaults
    pools = set(project.node_pools or ()) or every_pool
    found = {tuple(sorted(by_pool.get(pool, {}).items())) for pool in pools}
    return dict(found.pop()) if len(found) == 1 else {}
