"""The policies the simulator compares: a registry, so a new one is one entry.

Every policy runs the same :func:`scheduler.plan_cycle`; a spec only says how the simulator
dresses the snapshot (quotas as limits, node partitions, which pending jobs it shows, job
order, predicted run times) and which :class:`~scheduler.model.Policy` it passes.

- ``fifo-strict`` — the Helios per-VC FIFO baseline. Each team is confined to its quota
  (``Project(limit=quota)``, R3.1: no borrowing) and served strictly first-come-first-served:
  a team's later job never starts while its earliest pending job waits (head-of-line blocking;
  the simulator shows the core only the head of each team's queue that fits in the team's free
  quota, and drops any start that would jump a job that did not start). No reclaim, preempt or
  consolidation (nothing moves in a FIFO cluster). Teams share the nodes, so fragmentation by
  one team can block another's whole-node job.
- ``fifo-vc`` — the same, but every team also gets its own nodes (a node pool per VC, R5):
  exactly Helios's "each VC simulated separately". Needs whole-node quotas that fit.
- ``kai`` — ``Policy()`` defaults: quotas as fair-share quotas, over-quota weight = quota
  (§13), no limits, allocate / consolidation / reclaim / preempt (R1.1).
- ``kai-backfill`` — ``Policy(backfill=True)`` with every job's ``expected_s`` from the online
  predictor (:mod:`scheduler.predict`), learning from jobs as they finish. Until the core
  implements the B rules this behaves like ``kai``.
- ``kai-las`` — ``kai`` with service bands at 1 and 10 GPU-hours (Allot's L rules,
  :mod:`scheduler.bands`): inside each team the jobs that have held the fewest GPU-hours are
  served first and preempt those that have held more (Tiresias's discretised least attained
  service). Needs no run-time predictions; preempts jobs of the same team.
- ``sjf-oracle`` — ``kai`` with the true durations known: ``Job.order`` is the job's rank by
  duration (shortest first), so inside every team the shortest pending job is served first
  (R4.3 orders by priority, then `order`). Queue order between teams stays fair share (R4.1).
  A bound on what better ordering could give, not a product. Note that R8.1's "newest job
  first" victim order then means "longest job first".
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import Policy


@dataclass(frozen=True)
class PolicySpec:
    """How the simulator runs one policy (see the module doc for each registered one)."""

    name: str
    description: str
    policy: Policy
    quota_as_limit: bool = False
    strict_fifo: bool = False
    partition: bool = False
    predict: bool = False
    oracle_order: bool = False


LAS_BANDS = (1.0, 10.0)  # GPU-hours: Tiresias-style bands (scheduler/bands.py, L1)

_FIFO = Policy(consolidation=False, reclaim=False, preempt=False)

POLICIES: dict[str, PolicySpec] = {
    spec.name: spec
    for spec in (
        PolicySpec(
            "fifo-strict",
            "each team FIFO within its own quota, shared nodes (Helios per-VC FIFO)",
            _FIFO,
            quota_as_limit=True,
            strict_fifo=True,
        ),
        PolicySpec(
            "fifo-vc",
            "each team FIFO on its own nodes (Helios: VCs simulated separately)",
            _FIFO,
            quota_as_limit=True,
            strict_fifo=True,
            partition=True,
        ),
        PolicySpec("kai", "KAI defaults: fair share with borrowing and reclaim", Policy()),
        PolicySpec(
            "kai-backfill",
            "KAI + backfill fed by the online run-time predictor",
            Policy(backfill=True),
            predict=True,
        ),
        PolicySpec(
            "kai-las",
            "KAI + least attained service inside each team (bands at 1 and 10 GPU-hours)",
            Policy(service_bands=LAS_BANDS),
        ),
        PolicySpec(
            "sjf-oracle",
            "KAI with true durations: shortest job first inside each team (a bound)",
            Policy(),
            oracle_order=True,
        ),
    )
}


def get_policy(name: str) -> PolicySpec:
    """The registered spec called `name` (ValueError listing the known ones otherwise)."""
    try:
        return POLICIES[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(POLICIES)}") from None
