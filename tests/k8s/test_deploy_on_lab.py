"""deploy/kubernetes/allot.yaml on a real API server: what `kubectl apply --dry-run=server` and
`kubectl apply --server-side` do, through the Python client (no kubectl here), and the
ClusterRole tried for real by the agent itself (issue 25).

- dry run: every document the server does not hold yet is created with `dryRun=All` (what a
  client-side `kubectl apply --dry-run=server` sends for a new object), and every document is
  server-side applied with `dryRun=All`; both with `fieldValidation=Strict` (kubectl's default)
  and without a warning;
- server-side apply (PATCH `application/apply-patch+yaml`, field manager `kubectl`): no conflict,
  no warning, and applying again changes nothing (no new generation or resourceVersion);
- the service account `allot` with the ClusterRole as applied runs the portal's agent through a
  job's whole life (namespace, reservation pod, pods and their binding, Service, Ingress, the
  pod watch, the Services' and Ingresses' sweep, deletion) without one refusal.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException
from kubernetes.config import kube_config

from tests.k8s.lab import Lab
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    Rest,
    cluster_matches,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    job_pods,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "deploy" / "kubernetes" / "allot.yaml"
DOCUMENTS = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
FIELD_MANAGER = "kubectl"


def path_of(api: client.ApiClient, document: dict, named: bool = True) -> str:
    """The REST path of `document` (of its collection when not `named`), from discovery."""
    resources = dynamic.DynamicClient(api).resources
    resource = resources.get(api_version=document["apiVersion"], kind=document["kind"])
    metadata = document["metadata"]
    namespace = metadata.get("namespace") if resource.namespaced else None
    return resource.path(name=metadata["name"] if named else None, namespace=namespace)


def send(api: client.ApiClient, method: str, path: str, body, content_type: str,
         **query) -> tuple[dict, list[str]]:  # fmt: skip
    """One request with `fieldValidation=Strict`; (the answer, the server's warnings)."""
    params = [("fieldValidation", "Strict"), *query.items()]
    answer = api.call_api(
        path,
        method,
        query_params=params,
        body=body,
        auth_settings=["BearerToken"],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        _preload_content=False,
    )  # fmt: skip  (the raw response: its headers carry the warnings)
    return json.loads(answer.data), list(answer.headers.getlist("Warning"))


def apply(api: client.ApiClient, document: dict, dry_run: bool = False) -> tuple[dict, list[str]]:
    """`kubectl apply --server-side` of one document (with `--dry-run=server`)."""
    query = {"fieldManager": FIELD_MANAGER, **({"dryRun": "All"} if dry_run else {})}
    # The client sends the document as JSON, which is YAML.
    return send(api, "PATCH", path_of(api, document), document, "application/apply-patch+yaml",
                **query)  # fmt: skip


def exists(api: client.ApiClient, document: dict) -> bool:
    try:
        api.call_api(path_of(api, document), "GET", auth_settings=["BearerToken"],
                     _preload_content=False)  # fmt: skip
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.fixture
def applied(allot_lab: Lab):
    """Remove what the test applied, but the namespace (the reservation pods' too)."""
    yield
    api = allot_lab.api_client
    for document in reversed(DOCUMENTS):
        if document["kind"] == "Namespace":
            continue
        try:
            api.call_api(path_of(api, document), "DELETE", auth_settings=["BearerToken"],
                         query_params=[("propagationPolicy", "Background")],
                         _preload_content=False)  # fmt: skip
        except ApiException as exc:
            if exc.status != 404:
                raise


def version(answer: dict) -> tuple:
    """What an apply that changes nothing leaves alone: the spec's generation where there is one
    (controllers write a Deployment's status meanwhile), else the resourceVersion; and when
    kubectl's fields were last applied."""
    metadata = answer["metadata"]
    applied_at = [e["time"] for e in metadata.get("managedFields", []) if e["operation"] == "Apply"]
    return metadata.get("generation") or metadata["resourceVersion"], applied_at


def test_apply_dry_run_server_and_server_side_are_clean_and_idempotent(allot_lab, applied):
    api = allot_lab.api_client
    namespace = next(d for d in DOCUMENTS if d["kind"] == "Namespace")
    assert {d["metadata"].get("namespace", namespace["metadata"]["name"]) for d in DOCUMENTS
            if d["kind"] not in ("Namespace", "ClusterRole", "ClusterRoleBinding")} == {
        namespace["metadata"]["name"]
    }  # fmt: skip
    # The namespace first, as kubectl needs it for the dry run of what goes in it.
    _, warnings = apply(api, namespace)
    assert warnings == []

    for document in DOCUMENTS:  # `kubectl apply --dry-run=server`: new objects are created
        kind = f"{document['kind']}/{document['metadata']['name']}"
        if not exists(api, document):
            created, warnings = send(api, "POST", path_of(api, document, named=False),
                                     document, "application/json", dryRun="All")  # fmt: skip
            assert warnings == [] and created["kind"] == document["kind"], (kind, warnings)
        answer, warnings = apply(api, document, dry_run=True)  # `--server-side --dry-run=server`
        assert warnings == [] and answer["kind"] == document["kind"], (kind, warnings, answer)
        assert not exists(api, document) or document["kind"] == "Namespace", kind

    versions = {}
    for document in DOCUMENTS:  # `kubectl apply --server-side`
        answer, warnings = apply(api, document)
        kind = f"{document['kind']}/{document['metadata']['name']}"
        assert warnings == [], (kind, warnings)
        managed = answer["metadata"].get("managedFields", [])
        appliers = {entry["manager"] for entry in managed if entry["operation"] == "Apply"}
        if set(document) - {"apiVersion", "kind", "metadata"}:  # (a ServiceAccount has no field)
            assert appliers == {FIELD_MANAGER}, (kind, managed)
        versions[kind] = version(answer)
    for document in DOCUMENTS:  # again: nothing changes
        answer, warnings = apply(api, document)
        kind = f"{document['kind']}/{document['metadata']['name']}"
        assert warnings == [] and version(answer) == versions[kind], kind


def service_account_kubeconfig(lab: Lab, directory: Path) -> Path:
    """A kubeconfig of the `allot` service account (a TokenRequest token), as a pod has it."""
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    token = lab.core.create_namespaced_service_account_token("allot", "allot-system", request)
    admin = json.loads(lab.kubeconfig.read_text())
    ca = admin["clusters"][0]["cluster"]["certificate-authority-data"]
    assert base64.b64decode(ca)
    config = {
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "lab", "cluster": {"server": lab.server,
                                                  "certificate-authority-data": ca}}],
        "users": [{"name": "allot", "user": {"token": token.status.token}}],
        "contexts": [{"name": "allot", "context": {"cluster": "lab", "user": "allot"}}],
        "current-context": "allot",
    }  # fmt: skip
    path = directory / "allot.kubeconfig"
    path.write_text(json.dumps(config))
    return path


def test_the_service_account_of_the_manifest_may_do_all_the_agent_does(
    allot_lab, applied, portal_on_lab, api, cluster_admin, monkeypatch, tmp_path
):
    """The agent as the `allot` service account, bound to the applied ClusterRole."""
    from portal.scheduling import agent as agent_module

    for document in DOCUMENTS:
        apply(allot_lab.api_client, document)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION",
                        str(service_account_kubeconfig(allot_lab, tmp_path)))  # fmt: skip
    monkeypatch.setattr(agent_module, "_agent", None)
    agent = agent_module.get_agent()
    try:
        if hasattr(agent.config, "sweep_interval_s"):  # sweep Services and Ingresses each cycle
            agent.config = dataclasses.replace(agent.config, sweep_interval_s=0)
        rest = Rest(api(cluster_admin))
        rest.settle()
        rest.project("rbac", 4)
        rest.submit("rbac", "nb", 0.5, type="interactive", image="jupyter/base-notebook",
                    ports=[8888], service_type="ingress")  # fmt: skip
        rest.settle()
        rows = rest.all_running()
        cluster_matches(allot_lab.core, rows)
        networking = client.NetworkingV1Api(allot_lab.api_client)
        assert networking.read_namespaced_ingress("nb", "allot-rbac").spec.rules
        assert agent.problem == "" and agent.watcher.error == ""
        refused = [e for e in rest.events("rbac", "nb") if "403" in e["message"]]
        assert refused == []
        rest.delete("rbac", "nb")
        rest.settle()
        eventually(lambda: not job_pods(allot_lab.core), "the job's pods to be deleted")
        assert not allot_lab.core.list_namespaced_service("allot-rbac").items
        assert agent.problem == "" and agent.watcher.error == ""
    finally:
        agent.close()


def test_the_service_account_may_group_bind_explain_and_stop_external_pods(
    allot_lab, applied, portal_on_lab, monkeypatch, tmp_path
):
    """Issue 33 as the `allot` service account: a Job's pods that ask for Allot are grouped by
    reading the Job, told why they wait (an Event, PodScheduled), bound and labelled, and
    deleted by a stop, with nothing refused."""
    from agents.base import JobSpec, PodSpec
    from portal.scheduling import agent as agent_module

    for document in DOCUMENTS:
        apply(allot_lab.api_client, document)
    monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION",
                        str(service_account_kubeconfig(allot_lab, tmp_path)))  # fmt: skip
    monkeypatch.setattr(agent_module, "_agent", None)
    agent = agent_module.get_agent()
    core, ns = allot_lab.core, "rbac-external"
    core.create_namespace({"metadata": {"name": ns}})
    try:
        pod = {"spec": {"schedulerName": "allot", "restartPolicy": "Never",
                        "containers": [{"name": "work", "image": "busybox"}]}}  # fmt: skip
        client.BatchV1Api(allot_lab.api_client).create_namespaced_job(
            ns, {"metadata": {"name": "pair"}, "spec": {"parallelism": 2, "template": pod}}
        )

        def grouped():
            found = [w for w in agent.observe().workloads if w.ref.namespace == ns]
            return found if len(found) == 1 and len(found[0].pods) == 2 else None

        (workload,) = eventually(grouped, "the Job's two pods as one workload")
        assert (workload.ref.kind, workload.size) == ("Job", 2)  # the Job was read
        agent.explain({workload.ref.uid: "waiting for GPUs"})
        eventually(lambda: len(core.list_namespaced_event(ns).items) >= 2, "the Events")
        conditions = core.read_namespaced_pod(workload.pods[0].name, ns).status.conditions
        assert any(c.type == "PodScheduled" and c.message == "waiting for GPUs" for c in conditions)
        placement = tuple(PodSpec(node, (7,)) for node in allot_lab.nodes)
        spec = JobSpec("rbacx", "pair", placement, datetime.now(UTC), external=workload.ref)
        agent.start(spec)
        bound = core.list_namespaced_pod(ns, label_selector="allot.io/job=pair").items
        assert sorted(p.spec.node_name for p in bound) == sorted(allot_lab.nodes)
        agent.stop(*spec.key)  # suspends the Job; the cycles' observe resumes it and deletes
        # the pods that ended meanwhile (KWOK ends them at once): list and patch Jobs allowed

        def deleted() -> bool:
            agent.observe()
            return not core.list_namespaced_pod(ns, label_selector="allot.io/job=pair").items

        eventually(deleted, "the bound pods deleted")
        assert agent.problem == "" and agent.watcher.error == ""
    finally:
        agent.close()
        core.delete_namespace(ns)
