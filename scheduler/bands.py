"""Service bands (`Policy.service_bands`): Allot's rules L1-L3, least attained service first
inside a project. L1 and L2 are Allot's default (bands at 1 and 10 GPU-hours); L3 is opt-in
(`Policy.band_preemption`).

KAI serves a project's jobs by priority, then age (R4.3). When a team's queue holds both week-long
runs and ten-minute experiments, age alone makes the short ones wait behind the long ones, and
average waiting is set by the longest jobs. Shortest-job-first would fix that but needs run times
nobody knows in advance (on the Philly trace the online predictor is within a factor of two for
under half of the jobs, docs/simulation.md §9.7). Tiresias (Gu et al., "Tiresias: A GPU Cluster
Manager for Distributed Deep Learning", NSDI 2019) needs none: it serves the jobs that have
*received the least service* first, in a few discrete bands so that jobs do not swap places every
minute. Under the heavy-tailed run times of real GPU clusters a job that has run long is likely to
run longer still, so least-attained-service approximates shortest-remaining-first. Allot applies it
inside each project only; between projects fair share (R2, R4.1) is untouched, so no team gains or
loses GPUs by it. The rules (cite "(L2)" etc. in reasons, docstrings and tests):

**L1 Bands.** With thresholds t1 < t2 < … (GPU-hours), a preemptible job's band is the number of
thresholds its attained service (`Job.attained_gpu_s`: GPU-seconds held over all its runs so far,
evictions included) has reached: band 0 below t1, band 1 from t1, and so on. Non-preemptible
(interactive) jobs stay in band 0: their service is a person's session, not progress towards an
end, and they are never victims anyway (R7.3). Bands are derived when the cycle opens, from the
snapshot alone (the core keeps nothing between cycles).

**L2 Order.** Wherever R4.3, R8.1 and R10.2 compare priorities they compare the priority-class
value first and then the band, lower band meaning higher priority: inside a project, equal
classes are served band 0 first, then band 1, …, then by age (R4.3); victims are taken from the
highest band first (R8.1). Queue order between projects (R4.1) does not look at bands.

**L2 is the default.** Ordering alone evicts nothing KAI would not evict: it changes only which
of a team's pending jobs starts first, and which of a team's running jobs a reclaim or
preemption that KAI makes anyway takes. Together the two halves act as least-attained-service
driven by the reclaims fair share makes anyway: a reclaim takes the team's most-served job and
puts it behind the team's fresh work. On the overloaded Philly windows this is what makes
borrowing pay even when an evicted job restarts from zero (docs/simulation.md §9.9; 50k halved:
59,127 s of average queueing against KAI's order's 266,646 s and fixed quotas' 209,709 s).

**L3 Demotion preempts (opt-in, `Policy.band_preemption`).** As R10.2 preempts strictly lower
priority, a pending job of a lower band also preempts running jobs of the same project and class
in a higher band. So when a team's GPUs are all held by long runs, its new job starts at once in
place of the one that has run longest (newest first among equals, R8.1) instead of waiting for
one of them to end. It preempts jobs that never asked for it, so it suits clusters whose
training jobs checkpoint (Run:AI's own expectation of preemptible work): with checkpoints it
queues least of all (kai-las), from zero it throws away more work than it saves.

Not done: Tiresias's starvation guard (a job pending longer than a multiple of its last run is
promoted back to band 0) needs each pending job's waiting time, which the snapshot does not
carry; a long job waits while its own team keeps younger work in lower bands, but its team's fair
share still goes to that team and no other.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import replace

from .model import Job, Policy


def band_of(job: Job, thresholds: tuple[float, ...]) -> int:
    """L1: how many thresholds (GPU-hours) the job's attained service has reached; interactive
    jobs are always band 0."""
    if not thresholds or not job.preemptible:
        return 0
    return band_for(job.attained_gpu_s, thresholds)


def band_for(attained_gpu_s: float, thresholds: tuple[float, ...]) -> int:
    """L1 for a preemptible job that has held `attained_gpu_s` GPU-seconds."""
    return bisect_right(thresholds, attained_gpu_s / 3600.0)


def with_bands(jobs: list[Job], policy: Policy) -> list[Job]:
    """The snapshot's jobs with `band` derived (L1); jobs already right are kept as they are."""
    thresholds = tuple(policy.service_bands)
    out = []
    for job in jobs:
        band = band_of(job, thresholds)
        out.append(job if band == job.band else replace(job, band=band))
    return out


def check_bands(thresholds: tuple[float, ...]) -> None:
    """Thresholds must be positive, finite and strictly ascending (ValueError otherwise)."""
    previous = 0.0
    for value in thresholds:
        if not previous < value < float("inf"):
            raise ValueError(
                f"service_bands must be positive GPU-hours in ascending order, got {thresholds!r}"
            )
        previous = value


def victim_note(victim: Job) -> str:
    """What a reclaim's or preemption's reason adds when bands chose the victim (L2): nothing
    for a band-0 job, else what it has held and that a team's most-served jobs go first."""
    if victim.band == 0:
        return ""
    held = victim.attained_gpu_s / 3600.0
    return (
        f"; {victim.name} has held {held:.1f} GPU-h (service band {victim.band}), and a team's "
        "jobs that have held the most GPU-hours are taken first (L2)"
    )
