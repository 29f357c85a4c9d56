"""A job's ports on a real API server: the Jupyter job's Service and Ingress, a NodePort job's
Service and URL (issue 25).

The fake server validates objects against the OpenAPI schema; the real one also runs admission
and its controllers: the Service gets a cluster IP from the service range, the EndpointSlice
controller finds the job's Running pod through the Service's selector, the Ingress is stored as
`networking.k8s.io/v1`, and a NodePort is allocated from the node-port range.
"""

from __future__ import annotations

import pytest
from kubernetes import client

from agents.kubernetes.sessions import session_token
from portal.scheduling.agent import session_secret
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    INGRESS_HOST,
    Rest,
    cluster_matches,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rest(portal_on_lab, api, cluster_admin) -> Rest:
    made = Rest(api(cluster_admin))
    made.settle()  # a first cycle reads the cluster's nodes (submissions are checked against them)
    return made


def endpoints(api_client: client.ApiClient, namespace: str, service: str) -> set[str]:
    """The ready endpoint addresses of `service` (its EndpointSlices)."""
    slices = client.DiscoveryV1Api(api_client).list_namespaced_endpoint_slice(
        namespace, label_selector=f"kubernetes.io/service-name={service}"
    )
    return {address for piece in slices.items for endpoint in piece.endpoints or []
            if (endpoint.conditions is None or endpoint.conditions.ready)
            for address in endpoint.addresses}  # fmt: skip


def test_a_jupyter_jobs_service_and_ingress_are_accepted_and_route_to_its_pod(rest, allot_lab):
    core, networking = allot_lab.core, client.NetworkingV1Api(allot_lab.api_client)
    namespace = "allot-notebooks"
    rest.project("notebooks", 2)
    rest.submit("notebooks", "nb", 0.5, type="interactive", image="jupyter/base-notebook",
                ports=[8888], service_type="ingress")  # fmt: skip
    rest.settle()
    cluster_matches(core, rest.all_running())

    service = core.read_namespaced_service("nb", namespace)
    assert service.spec.type == "ClusterIP" and service.spec.cluster_ip.startswith("10.0.0.")
    assert [(p.port, p.target_port) for p in service.spec.ports] == [(8888, 8888)]
    selected = core.list_namespaced_pod(
        namespace, label_selector=",".join(f"{k}={v}" for k, v in service.spec.selector.items())
    ).items
    assert [pod.metadata.name for pod in selected] == ["nb-0"]
    pod_ip = eventually(lambda: core.read_namespaced_pod("nb-0", namespace).status.pod_ip, "IP")
    eventually(lambda: endpoints(allot_lab.api_client, namespace, "nb") == {pod_ip},
               "the EndpointSlice controller to find the notebook's pod")  # fmt: skip

    ingress = networking.read_namespaced_ingress("nb", namespace)
    (rule,) = ingress.spec.rules
    (path,) = rule.http.paths
    assert rule.host == INGRESS_HOST and path.path == "/notebooks-nb-8888"
    assert path.path_type == "Prefix"
    assert (path.backend.service.name, path.backend.service.port.number) == ("nb", 8888)
    url = f"https://{INGRESS_HOST}/notebooks-nb-8888"
    assert [(u["port"], u["url"]) for u in rest.job("notebooks", "nb")["urls"]] == [(8888, url)]

    main = core.read_namespaced_pod("nb-0", namespace).spec.containers[0]
    env = {variable.name: variable.value for variable in main.env}
    assert env["JUPYTER_TOKEN"] == session_token(session_secret(), "notebooks", "nb")
    assert "--ServerApp.base_url=/sessions/notebooks/nb/" in main.args

    rest.delete("notebooks", "nb")
    rest.settle()

    def exposed() -> list[str]:
        names = [s.metadata.name for s in core.list_namespaced_service(namespace).items]
        return names + [
            i.metadata.name for i in networking.list_namespaced_ingress(namespace).items
        ]

    eventually(lambda: exposed() == [], "the Service and Ingress to be deleted with the job")


def test_a_nodeport_jobs_url_is_its_nodes_address_and_allocated_port(rest, allot_lab):
    core = allot_lab.core
    rest.project("serving", 2)
    rest.submit("serving", "api", 1, ports=[8080], service_type="nodeport")
    rest.settle()
    (row,) = rest.all_running()
    service = core.read_namespaced_service("api", "allot-serving")
    assert service.spec.type == "NodePort"
    (port,) = service.spec.ports
    assert 30000 <= port.node_port <= 32767
    node = core.read_node(row["placement"][0]["node"])
    address = {a.type: a.address for a in node.status.addresses}["InternalIP"]
    urls = rest.job("serving", "api")["urls"]
    assert [(u["port"], u["url"]) for u in urls] == [(8080, f"http://{address}:{port.node_port}")]
