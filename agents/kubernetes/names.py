"""Names shared by the manifests and the session lookup: where a project's objects live.

Its own module so that `manifests` (which sets up Launch Jupyter pods through `sessions`) and
`sessions` (which finds a pod's Service by its namespace) both import it, one way.
"""

from __future__ import annotations


def namespace_for(project: str) -> str:
    """The namespace of a project's jobs."""
    return f"allot-{project}"[:63].rstrip("-")
