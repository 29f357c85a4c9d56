"""Stale gang eviction (R6.4): a gang that has run below its pod count for too long."""

from __future__ import annotations

from ..session import Session


def evict_stale_gangs(session: Session, now: float) -> None:
    """Evict every running job with fewer placed pods than it asks for, no pod finished, and
    `degraded_since` older than the policy's grace period (default 60 s; negative = never)."""
    grace = session.policy.staleness_grace_s
    if grace < 0:
        return
    # Only a degraded gang can be stale: look at those, not at every running job (in the
    # session's order, as `running_untouched` gives them).
    for job in [j for j in session.jobs if j.degraded_since is not None]:
        if not session.alive(job):
            continue
        placed = len(session.state.placement.get(job.key, ()))
        if placed >= job.pods:
            continue
        stale_for = now - job.degraded_since
        if stale_for <= grace:
            continue
        session.state.unplace(job)
        session.record(
            "evict",
            job,
            "stalegangeviction",
            f"evicted: only {placed} of its {job.pods} pods have run for {stale_for:.0f} s, "
            f"longer than the {grace:.0f} s grace period (R6.4)",
        )
