"""A job's stop as the REST API and the pages ask for it: the agent's part, then the service.

`portal.jobs.services.stop_job` writes the row; what needs the agent (the cluster) is done here,
outside its transaction, because a network call never runs inside one.
"""

from __future__ import annotations

from portal.jobs import services
from portal.jobs.models import Job


def stop(job: Job, user=None) -> Job:
    """Stop `job` (Stopped, GPUs free at once); the next cycle stops its pods."""
    return services.stop_job(job, user)
