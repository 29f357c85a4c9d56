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
- ``kai`` — Allot's default, ``Policy()``: quotas as fair-share quotas, over-quota weight =
  quota (§13), no limits, allocate / consolidation / reclaim / preempt (R1.1), and service
  bands at 1 and 10 GPU-hours ordering each team's jobs (Allot's L1, L2, :mod:`scheduler.bands`):
  a team's job that has held fewer GPU-hours starts first, and a reclaim takes the team's job
  that has held more first. No own-team preemption by band (L3 off).
- ``kai-plain`` — KAI's own order inside a team (priority, then age): ``kai`` without service
  bands, Allot's default before bands.
- ``kai-backfill`` — ``Policy(backfill=True)`` with every job's ``expected_s`` from the online
  predictor (:mod:`scheduler.predict`), learning from jobs as they finish; ``kai-plain-backfill``
  the same on ``kai-plain``.
- ``kai-backfill-oracle`` — ``kai-backfill`` with each job's true run time as its prediction
  (`expected_s`, the run left after a checkpoint): what backfill could give with a perfect
  predictor. A bound, not a product.
- ``kai-las`` — ``kai`` with L3 as well: a team's job of a lower band also preempts the team's
  running jobs in a higher band (Tiresias's least attained service, preemptive). Preempts jobs
  of the same team.
- ``sjf-oracle`` — ``kai-plain`` with the true durations known: ``Job.order`` is the job's rank by
  duration (shortest first), so inside every team the shortest pending job is served first
  (R4.3 orders by priority, then `order`). Queue order between teams stays fair share (R4.1).
  A bound on what better ordering could give, not a product. Note that R8.1's "newest job
  first" victim order then means "longest job first".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from scheduler.model import DEFAULT_BANDS, Policy


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
    oracle_runtime: bool = False


_FIFO = Policy(consolidation=False, reclaim=False, preempt=False, service_bands=())
_PLAIN = Policy(service_bands=())  # KAI's own order inside a team

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
        PolicySpec(
            "kai",
            "Allot's default: KAI's fair share and reclaim, service bands order each team's jobs",
            Policy(),
        ),
        PolicySpec("kai-plain", "KAI's own order inside a team (priority, then age)", _PLAIN),
        PolicySpec(
            "kai-backfill",
            "kai + backfill fed by the online run-time predictor",
            Policy(backfill=True),
            predict=True,
        ),
        PolicySpec(
            "kai-backfill-oracle",
            "kai + backfill with every job's true run time as its prediction (a bound)",
            Policy(backfill=True),
            predict=True,
            oracle_runtime=True,
        ),
        PolicySpec(
            "kai-plain-backfill",
            "kai-plain + backfill fed by the online run-time predictor",
            replace(_PLAIN, backfill=True),
            predict=True,
        ),
        PolicySpec(
            "kai-las",
            "kai + band preemption inside each team (L3; bands at 1 and 10 GPU-hours)",
            Policy(service_bands=DEFAULT_BANDS, band_preemption=True),
        ),
        PolicySpec(
            "sjf-oracle",
            "KAI with true durations: shortest job first inside each team (a bound)",
            _PLAIN,
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
