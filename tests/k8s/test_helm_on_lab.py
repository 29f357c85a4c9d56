"""The Helm chart (issue 35) on a real API server: `helm template` of a trial install (in-chart
PostgreSQL and Redis, the Ingress of the portal and the notebooks' origin, the Secret, the
PodDisruptionBudgets) is what `kubectl apply --dry-run=server` and then `--server-side` accept,
with strict field validation and not one warning, and applying again changes nothing.
The default rendering (deploy/kubernetes/allot.yaml) is applied by test_deploy_on_lab.py."""

from __future__ import annotations

import json

import pytest
from kubernetes.client.rest import ApiException

from tests.deploy.helm import render
from tests.k8s.test_deploy_on_lab import apply, exists, path_of, send, version

pytestmark = [pytest.mark.k8s]
RELEASE, NAMESPACE = "trial", "allot-helm-trial"
OPTIONS = ("--set", "namespace.create=true", "--set", "ingress.enabled=true",
           "--set", "ingress.host=allot.example.org",
           "--set", "ingress.notebooksHost=*.nb.example.org",
           "--set", "sessionsOrigin=https://*.nb.example.org")  # fmt: skip


def held(api, document: dict) -> dict:
    """The object as the API server holds it."""
    answer = api.call_api(path_of(api, document), "GET", auth_settings=["BearerToken"],
                          header_params={"Accept": "application/json"},
                          _preload_content=False)  # fmt: skip
    return json.loads(answer.data)


@pytest.fixture
def documents(k8s_lab):
    """The trial's documents; deleted afterwards (the Namespace last, taking the rest)."""
    rendered = render(*OPTIONS, release=RELEASE, namespace=NAMESPACE)
    yield rendered
    api = k8s_lab.api_client
    for document in reversed(rendered):
        try:
            api.call_api(path_of(api, document), "DELETE", auth_settings=["BearerToken"],
                         query_params=[("propagationPolicy", "Background")],
                         _preload_content=False)  # fmt: skip
        except ApiException as exc:
            if exc.status != 404:
                raise


def test_the_trial_install_applies_dry_run_then_server_side_cleanly_and_idempotently(
    k8s_lab, documents
):
    api = k8s_lab.api_client
    kinds = {d["kind"] for d in documents}
    assert {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "Deployment",
        "PodDisruptionBudget",
        "Service",
        "Ingress",
        "StatefulSet",
    } <= kinds
    namespace = next(d for d in documents if d["kind"] == "Namespace")
    assert namespace["metadata"]["name"] == NAMESPACE
    _, warnings = apply(api, namespace)  # as kubectl needs it for the dry run of what is in it
    assert warnings == []

    for document in documents:  # `kubectl apply --dry-run=server`
        kind = f"{document['kind']}/{document['metadata']['name']}"
        if not exists(api, document):
            created, warnings = send(api, "POST", path_of(api, document, named=False),
                                     document, "application/json", dryRun="All")  # fmt: skip
            assert warnings == [] and created["kind"] == document["kind"], (kind, warnings)
        answer, warnings = apply(api, document, dry_run=True)
        assert warnings == [] and answer["kind"] == document["kind"], (kind, warnings, answer)
        assert not exists(api, document) or document["kind"] == "Namespace", kind

    versions = {}
    for document in documents:  # `kubectl apply --server-side`
        answer, warnings = apply(api, document)
        kind = f"{document['kind']}/{document['metadata']['name']}"
        assert warnings == [], (kind, warnings)
        versions[kind] = version(answer)
    for document in documents:  # again: nothing changes
        answer, warnings = apply(api, document)
        kind = f"{document['kind']}/{document['metadata']['name']}"
        assert warnings == [] and version(answer) == versions[kind], kind

    # What the server holds: the web pod template's probes, resources and service account.
    web = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"]
               == f"{RELEASE}-web")  # fmt: skip
    pod = held(api, web)["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == RELEASE
    container = pod["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz/"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz/"
    assert container["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}
    ingress = next(d for d in documents if d["kind"] == "Ingress")
    hosts = {r["host"] for r in held(api, ingress)["spec"]["rules"]}
    assert hosts == {"allot.example.org", "*.nb.example.org"}
