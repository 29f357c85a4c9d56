"""Jupyter sessions under Kubernetes: the portal's `/sessions/{project}/{name}/` proxy reaches the
job's pod through its Service, as it reaches a local JupyterLab under the simulated agent.

Launch Jupyter submits an interactive job with port 8888 and no command; for such a job the pod
runs the image's `start-notebook.py` (Jupyter's docker-stacks images, Run:AI's quickstart
convention) with the proxy's path as base URL and a token in `JUPYTER_TOKEN`. The token is an
HMAC of the job's identity under a secret only Allot knows, so the proxy derives it again and
adds it to every request; the browser never sees it. Allot must run inside the cluster for the
Service name to resolve (deploy/kubernetes); from outside, use `service_type=ingress`.
"""

from __future__ import annotations

import hashlib
import hmac

from agents.base import JobSpec
from agents.kubernetes.names import namespace_for
from agents.sessions import JUPYTER_PORT, Session, session_path


def session_token(secret: str, project: str, name: str) -> str:
    """The Jupyter token of one job's session."""
    return hmac.new(secret.encode(), f"{project}/{name}".encode(), hashlib.sha256).hexdigest()


def is_session(job: JobSpec) -> bool:
    """True for a job Launch Jupyter made: interactive, port 8888, the image's own command."""
    return job.type == "interactive" and JUPYTER_PORT in job.ports and not job.command


def notebook_container(job: JobSpec, secret: str) -> dict:
    """The container fields that make the notebook server answer the portal's proxy."""
    return {
        "args": ["start-notebook.py", f"--ServerApp.base_url={session_path(job.project, job.name)}",
                 "--ServerApp.allow_origin=*"],
        "env": [{"name": "JUPYTER_TOKEN", "value": session_token(secret, job.project, job.name)}],
    }  # fmt: skip


class KubernetesSessions:
    """Where jobs' notebook servers answer inside the cluster (the agent's `sessions`).

    A server is the job's pod, which the agent creates and deletes with the job, so no server
    outlives its job here: `all` has none to sweep and `stop` has nothing of its own to stop."""

    def __init__(self, secret: str):
        self.secret = secret

    def get(self, project: str, name: str) -> Session:
        """The job's Service address and derived token (answering once the pod runs)."""
        return Session(
            project=project,
            name=name,
            port=JUPYTER_PORT,
            token=session_token(self.secret, project, name),
            pid=0,
            base_url=session_path(project, name),
            host=f"{name}.{namespace_for(project)}.svc",
        )

    def all(self) -> list[Session]:
        """None: every notebook pod belongs to a job the agent stops with it."""
        return []

    def stop(self, project: str, name: str) -> bool:
        """False: the agent's `stop` deletes the job's pod, and with it the server."""
        return False
