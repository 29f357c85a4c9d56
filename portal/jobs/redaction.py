"""Texts shown to a project name only jobs its members may see (issue 32 item 7).

The scheduler explains a decision with the other job it was for: "moved to dgx1-1 so
team-d/secret-merger-x can start (R11.1)" on team-a's job, read by team-a's viewers; reclaim,
preemption, backfill and eviction texts name jobs the same way. The texts are stored whole (a
cluster admin reads them so, and the audit of a decision needs them); whoever reads one without
seeing that project gets "another project's job" instead of its name. A project's own name may
stay where it is the reason ("team-d reclaims its quota (R9)"): that is what fair share shows
to all on the overview.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

# `project/job` as the scheduler writes it: two DNS labels joined by a slash, standing alone
JOB_REF = re.compile(
    r"(?<![\w./-])([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)/([a-z0-9](?:[-a-z0-9]*[a-z0-9])?)(?![\w/-])"
)
ANOTHER = "another project's job"


def redactor(visible: Collection[str] | None, projects: Collection[str]) -> Callable[[str], str]:
    """A function that takes a text and names in it only jobs of `visible` projects (None: all,
    a cluster admin's view); `projects` are all projects' names, so that only a real job
    reference is replaced, never another `a/b` (a GPU count such as "0/4")."""
    if visible is None:
        return lambda text: text
    hidden = frozenset(projects) - frozenset(visible)

    def swap(match: re.Match) -> str:
        return ANOTHER if match.group(1) in hidden else match.group(0)

    def redact(text: str) -> str:
        return JOB_REF.sub(swap, text) if text and hidden else text

    return redact


def redactor_when_needed(
    names: Callable[[], tuple[Collection[str], Collection[str]]],
) -> Callable[[str], str]:
    """`redactor(*names())`, with `names` (the visible projects' and all projects' names, two
    queries) called only once a text holds something shaped as a job reference: most texts a
    job list shows ("waits for quota (R3)") name no job, and a page of them then costs none."""
    made: list[Callable[[str], str]] = []

    def redact(text: str) -> str:
        if not text or JOB_REF.search(text) is None:
            return text
        if not made:
            made.append(redactor(*names()))
        return made[0](text)

    return redact
