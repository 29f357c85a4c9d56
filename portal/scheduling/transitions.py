"""A row change the agent's observation calls for (`observe.transitions` makes them; the cycle's
commit and the job runs carry them out). Its own module, so `runs` can name it without
importing `observe`, which imports `runs`."""

from __future__ import annotations

from dataclasses import dataclass

from agents.base import JobKey
from portal.jobs.models import FINISHED as ROW_FINISHED


@dataclass(frozen=True)
class Transition:
    """A row change the agent's observation calls for; `kind` and `message` become its event."""

    job: JobKey
    new_status: str
    kind: str
    message: str

    @property
    def leaves(self) -> bool:
        """True when the job gives its GPUs back (it finished, failed or timed out)."""
        return self.new_status in ROW_FINISHED
