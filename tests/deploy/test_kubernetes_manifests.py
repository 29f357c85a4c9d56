"""deploy/kubernetes/allot.yaml (the Helm chart rendered, tests/deploy/test_helm_chart.py): every
document valid against the official schema, and the
ClusterRole grants what the agent's manifests need and nothing cluster-wide beyond it."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [d for d in yaml.safe_load_all((ROOT / "deploy/kubernetes/allot.yaml").read_text())
             if d]  # fmt: skip


@pytest.mark.parametrize(
    "document", DOCUMENTS, ids=lambda d: f"{d['kind']}/{d['metadata']['name']}"
)
def test_every_document_is_valid(document):
    kubernetes_validate.validate(document, "1.30", strict=True)


def rules() -> dict[str, set[str]]:
    role = next(d for d in DOCUMENTS if d["kind"] == "ClusterRole")
    return {
        resource: set(rule["verbs"]) for rule in role["rules"] for resource in rule["resources"]
    }


def test_the_role_lets_allot_bind_pods_and_read_logs_but_not_touch_secrets_or_nodes():
    granted = rules()
    assert granted["pods/binding"] == {"create"}
    assert {"create", "delete", "watch"} <= granted["pods"]
    assert granted["pods/log"] == {"get"}
    assert granted["nodes"] == {"get", "list", "watch"}  # reads nodes, never changes them
    assert "secrets" not in granted and "*" not in granted


def test_web_worker_notifier_and_beat_run_as_the_allot_service_account_with_the_agent():
    deployments = {d["metadata"]["name"]: d for d in DOCUMENTS if d["kind"] == "Deployment"}
    assert set(deployments) == {"allot-web", "allot-worker", "allot-notifier", "allot-beat"}
    for deployment in deployments.values():
        assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "allot"
    web = deployments["allot-web"]["spec"]["template"]["spec"]["containers"][0]
    assert {"name": "ALLOT_AGENT", "value": "kubernetes"} in web["env"]
    assert deployments["allot-beat"]["spec"]["replicas"] == 1


def ports_of(node) -> list[dict]:
    """Every `ports` entry anywhere in a document (containers' and Services')."""
    if isinstance(node, dict):
        found = list(node.get("ports", [])) if isinstance(node.get("ports"), list) else []
        return found + [port for value in node.values() for port in ports_of(value)]
    if isinstance(node, list):
        return [port for value in node for port in ports_of(value)]
    return []


def test_every_port_names_its_protocol_as_server_side_apply_requires():
    """`kubectl apply --server-side` keys ports on (port, protocol): one without `protocol` is
    rejected ("associative list with keys has an element that omits key field protocol")."""
    ports = [port for document in DOCUMENTS for port in ports_of(document)]
    assert ports and all("protocol" in port for port in ports), ports
