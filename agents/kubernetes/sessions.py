"""Jupyter sessions under Kubernetes: the portal's `/sessions/{project}/{name}/` proxy reaches the
job's pod through its Service, as it reaches a local JupyterLab under the simulated agent.

Launch Jupyter submits an interactive job with port 8888 and no command; for such a job the pod
runs the image's `start-notebook.py` (Jupyter's docker-stacks images, Run:AI's quickstart
convention) with the proxy's path as base URL and a token in `JUPYTER_TOKEN`. The token is an
HMAC of the job's identity under a secret only Allot knows, so the proxy derives it again and
adds it to every request; the browser never sees it. Allot must run inside the cluster for the
Service name to resolve (deploy/kubernetes); from outside, use `service_type=ingress`.

Each user's notebooks in a project share a persistent workspace (issue 23): a
PersistentVolumeClaim per (project, user) in the project's namespace, `workspace_claim`, created
when a session of theirs first starts (storage class and size by setting) and mounted at the
notebook's home (`/home/jovyan`, docker-stacks' user, whose group 100 may write it). It outlives
sessions; `delete_workspace` deletes it on request, never while a session's pod mounts it.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec
from agents.kubernetes.names import namespace_for
from agents.sessions import JUPYTER_PORT, Session, WorkspaceBusy, session_path

WORKSPACE_HOME = "/home/jovyan"  # the notebook's home in Jupyter's docker-stacks images
WORKSPACE_GROUP = 100  # their user's group ("users"): the claim's files are made its (fsGroup)
WORKSPACE_LABEL = "allot.io/workspace"


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


def workspace_claim_name(user: str) -> str:
    """The name of `user`'s workspace claim in a project's namespace (DNS-1123, unique per user:
    a readable part and a digest of the exact username)."""
    readable = re.sub(r"[^a-z0-9-]+", "-", user.lower())[:40].strip("-")
    digest = hashlib.sha256(user.encode()).hexdigest()[:8]
    return f"workspace-{readable}-{digest}" if readable else f"workspace-{digest}"


def workspace_claim(project: str, user: str, size: str = "10Gi",
                    storage_class: str | None = None) -> dict:  # fmt: skip
    """The PersistentVolumeClaim of `user`'s workspace in `project`."""
    spec = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": workspace_claim_name(user),
            "namespace": namespace_for(project),
            "labels": {"app.kubernetes.io/managed-by": "allot", WORKSPACE_LABEL: "true",
                       "allot.io/project": project},
            "annotations": {"allot.io/user": user},
        },
        "spec": spec,
    }  # fmt: skip


def mount_workspace(pod: dict, job: JobSpec) -> None:
    """Mount the job's user's workspace claim at the notebook's home in `pod` (a manifest)."""
    spec = pod["spec"]
    claim = {"claimName": workspace_claim_name(job.user)}
    spec.setdefault("volumes", []).append({"name": "workspace", "persistentVolumeClaim": claim})
    container = spec["containers"][0]
    container.setdefault("volumeMounts", []).append(
        {"name": "workspace", "mountPath": WORKSPACE_HOME}
    )
    spec["securityContext"] = {**spec.get("securityContext", {}), "fsGroup": WORKSPACE_GROUP}


class KubernetesSessions:
    """Where jobs' notebook servers answer inside the cluster (the agent's `sessions`).

    A server is the job's pod, which the agent creates and deletes with the job, so no server
    outlives its job here: `all` has none to sweep and `stop` has nothing of its own to stop."""

    def __init__(self, secret: str, api: client.ApiClient | None = None, size: str = "10Gi",
                 storage_class: str | None = None):  # fmt: skip
        self.secret = secret
        self.api = api
        self.size = size
        self.storage_class = storage_class

    def claim_for(self, job: JobSpec) -> dict | None:
        """The workspace claim a job's pods mount (None: not a Launch Jupyter job of a user's)."""
        if not (self.secret and is_session(job) and job.user):
            return None
        return workspace_claim(job.project, job.user, self.size, self.storage_class)

    def workspace_projects(self, user: str) -> list[str]:
        """The projects in which `user` has a workspace claim."""
        core = client.CoreV1Api(self.api)
        claims = core.list_persistent_volume_claim_for_all_namespaces(
            label_selector=f"{WORKSPACE_LABEL}=true"
        ).items
        return sorted({
            claim.metadata.labels.get("allot.io/project", "") for claim in claims
            if (claim.metadata.annotations or {}).get("allot.io/user") == user
        } - {""})  # fmt: skip

    def delete_workspace(self, project: str, user: str) -> bool:
        """Delete `user`'s workspace claim in `project`; False when there was none. Raises
        WorkspaceBusy while a pod in the namespace mounts it."""
        core = client.CoreV1Api(self.api)
        namespace, name = namespace_for(project), workspace_claim_name(user)
        for pod in core.list_namespaced_pod(namespace).items:
            for volume in pod.spec.volumes or ():
                claim = volume.persistent_volume_claim
                if claim is not None and claim.claim_name == name:
                    raise WorkspaceBusy(
                        f"a Jupyter session of {user}'s in {project} uses the workspace "
                        f"(pod {pod.metadata.name}): stop it first"
                    )
        try:
            core.delete_namespaced_persistent_volume_claim(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

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
