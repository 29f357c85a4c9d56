"""Service bands (`Policy.service_bands`): Allot's rules L1-L3, least attained service first
inside a project.

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

**L3 Demotion preempts.** As R10.2 preempts strictly lower priority, a pending job of a lower
band preempts running jobs of the same project and class in a higher band. So when a team's GPUs
are all held by long runs, its new job starts at once in place of the one that has run longest
(newest first among equals, R8.1) instead of waiting for one of them to end. This is what makes
the policy pay, and what makes it opt-in: it preempts jobs that never asked for it, so it suits
clusters whose training jobs checkpoint (Run:AI's own expectation of preemptible work); a job
that restarts from zero loses its run.

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
