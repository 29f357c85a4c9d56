"""Names shared by the manifests and the session lookup: where a project's objects live.

Its own module so that `manifests` (which sets up Launch Jupyter pods through `sessions`) and
`sessions` (which finds a pod's Service by its namespace) both import it, one way.
"""

from __future__ import annotations

import hashlib

LABEL_MAX = 63  # a namespace's name is a DNS label


def namespace_for(project: str) -> str:
    """The namespace of a project's jobs: `allot-<project>`, or, for a name too long for a
    label, its first characters and a hash of the whole name - cutting it at 63 characters gave
    two projects whose names share their first 57 one namespace (issue 32 item 2). Every name
    that fits keeps the namespace it had."""
    name = f"allot-{project}"
    if len(name) <= LABEL_MAX:
        return name
    digest = hashlib.sha256(project.encode()).hexdigest()[:10]
    return f"{name[: LABEL_MAX - len(digest) - 1].rstrip('-')}-{digest}"
