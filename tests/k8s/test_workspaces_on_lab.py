"""Issue 23 on a real API server: a user's Jupyter job mounts their workspace claim in the
project at the notebook's home; the claim is created on the first launch (storage class and size
as set), outlives the job, and is deleted on request only once no pod mounts it."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes.client.exceptions import ApiException
from kubernetes.config import kube_config

from agents.base import JobSpec, PodSpec
from agents.kubernetes.agent import KubernetesAgent
from agents.kubernetes.inventory import KubernetesConfig
from agents.kubernetes.names import namespace_for
from agents.kubernetes.sessions import WORKSPACE_HOME, workspace_claim_name
from agents.sessions import WorkspaceBusy
from tests.k8s.lab import eventually

pytestmark = pytest.mark.k8s


@pytest.fixture
def agent(k8s_lab, monkeypatch) -> Iterator[KubernetesAgent]:
    """The agent as the lab's admin, with workspaces of 2Gi in storage class lab-standard."""
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", str(k8s_lab.kubeconfig))
    made = KubernetesAgent(KubernetesConfig(
        node_refresh_s=0, watch_timeout_s=10, grace_period_s=0, session_secret="s3cret",
        workspace_size="2Gi", workspace_storage_class="lab-standard",
    ))  # fmt: skip
    yield made
    made.close()


@pytest.fixture
def project(k8s_lab) -> Iterator[str]:
    name = f"ws-{uuid.uuid4().hex[:6]}"
    yield name
    try:
        k8s_lab.core.delete_namespace(namespace_for(name))
    except ApiException as exc:
        if exc.status != 404:
            raise


def notebook(node: str, project: str, name: str, user: str) -> JobSpec:
    return JobSpec(project, name, (PodSpec(node, (0,), 0.5),), datetime.now(UTC),
                   type="interactive", gpus=0.5, ports=(8888,), image="jupyter/base-notebook",
                   user=user)  # fmt: skip


def test_a_notebook_mounts_its_users_workspace_claim_which_outlives_it(agent, k8s_lab, project):
    core, namespace, claim = k8s_lab.core, namespace_for(project), workspace_claim_name("bob")
    agent.start(notebook(k8s_lab.nodes[0], project, "jupyter-bob", "bob"))
    pod = eventually(lambda: _pod(core, namespace, "jupyter-bob-0"), "the notebook's pod")

    volumes = {v.name: v for v in pod.spec.volumes or ()}
    assert volumes["workspace"].persistent_volume_claim.claim_name == claim
    mounts = {m.name: m.mount_path for m in pod.spec.containers[0].volume_mounts}
    assert mounts["workspace"] == WORKSPACE_HOME == "/home/jovyan"
    assert pod.spec.security_context.fs_group == 100  # docker-stacks' user may write it
    made = core.read_namespaced_persistent_volume_claim(claim, namespace)
    assert made.spec.resources.requests["storage"] == "2Gi"
    assert made.spec.storage_class_name == "lab-standard"
    assert made.metadata.annotations["allot.io/user"] == "bob"
    assert agent.sessions.workspace_projects("bob") == [project]
    assert agent.sessions.workspace_projects("eve") == []

    with pytest.raises(WorkspaceBusy, match="stop it first"):
        agent.sessions.delete_workspace(project, "bob")  # its pod mounts it

    agent.stop(project, "jupyter-bob")
    eventually(lambda: _pod(core, namespace, "jupyter-bob-0") is None, "the pod to go")
    assert core.read_namespaced_persistent_volume_claim(claim, namespace)  # kept
    agent.start(notebook(k8s_lab.nodes[0], project, "jupyter-bob-2", "bob"))  # a relaunch
    again = eventually(lambda: _pod(core, namespace, "jupyter-bob-2-0"), "the new pod")
    assert {v.persistent_volume_claim.claim_name for v in again.spec.volumes
            if v.persistent_volume_claim} == {claim}  # fmt: skip
    agent.stop(project, "jupyter-bob-2")
    eventually(lambda: _pod(core, namespace, "jupyter-bob-2-0") is None, "the new pod to go")

    assert agent.sessions.delete_workspace(project, "bob")
    eventually(lambda: not _claims(core, namespace), "the claim to be deleted")
    assert not agent.sessions.delete_workspace(project, "bob")


def test_a_job_of_no_one_or_not_a_notebook_gets_no_workspace(agent, k8s_lab, project):
    core, namespace = k8s_lab.core, namespace_for(project)
    agent.start(notebook(k8s_lab.nodes[0], project, "anon", ""))
    train = JobSpec(project, "train", (PodSpec(k8s_lab.nodes[0], (1,)),), datetime.now(UTC),
                    image="busybox", command="sleep 600", user="bob")  # fmt: skip
    agent.start(train)
    for name in ("anon-0", "train-0"):
        pod = eventually(lambda name=name: _pod(core, namespace, name), name)
        assert not [v for v in pod.spec.volumes or () if v.persistent_volume_claim], name
    assert not _claims(core, namespace)
    agent.stop(project, "anon")
    agent.stop(project, "train")


def _pod(core, namespace: str, name: str):
    try:
        return core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def _claims(core, namespace: str) -> list:
    return core.list_namespaced_persistent_volume_claim(namespace).items
