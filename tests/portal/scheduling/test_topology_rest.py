"""Topology through the portal (issue 38, R23): node labels and a pool's levels set over REST,
a job's `topology` strict in REST, the snapshot carrying them to the core, the cycle placing a
required gang inside one rack or keeping it pending with the level's reason, and the Kubernetes
inventory's labels kept on the node rows."""

from __future__ import annotations

import pytest
from kubernetes import client

from agents.base import NodeStatus
from agents.kubernetes.inventory import KubernetesConfig, node_status
from portal.cluster.models import Node, PoolTopology
from portal.cluster.sync import sync_nodes
from portal.jobs.models import HOLDING, Status
from portal.scheduling import snapshot

pytestmark = pytest.mark.django_db
RACK = "example.com/rack"
A = "/api/v1"


@pytest.fixture
def racks(api, cluster_admin, cluster):
    """Four 1-GPU nodes in two racks, labelled and given levels over REST; project team-a."""
    admin = api(cluster_admin)
    for i in range(4):
        body = {"name": f"n{i}", "gpus": 1, "labels": {RACK: f"r{i // 2}"}}
        assert admin.post(f"{A}/nodes/", body, format="json").status_code == 201
    body = {"pool": "default", "levels": [RACK]}
    assert admin.post(f"{A}/topology/", body, format="json").status_code == 201
    cluster.project("team-a", 8)
    return admin


def submit(admin, name: str, pods: int, **topology):
    body = {"project": "team-a", "name": name, "gpus": 1, "pods": pods}
    if topology:
        body["topology"] = topology
    return admin.post(f"{A}/jobs/", body, format="json")


def test_r23_1_labels_levels_and_a_jobs_constraint_reach_the_snapshot(racks):
    assert submit(racks, "gang", 2, required="rack").status_code == 201
    state = snapshot.load()
    assert [n.label(RACK) for n in state.nodes] == ["r0", "r0", "r1", "r1"]
    assert state.snapshot(0).topology == {"default": (RACK,)}
    (job,) = state.jobs
    assert (job.topology_required, job.topology_preferred) == ("rack", None)
    shown = racks.get(f"{A}/jobs/team-a/gang/").json()
    assert shown["topology"] == {"required": "rack"}


def test_r23_2_a_required_gang_runs_in_one_rack_or_waits_naming_the_level(racks, cluster):
    assert submit(racks, "one", 1).status_code == 201
    cluster.settle()
    assert cluster.job("team-a", "one").nodes == ["n0"]
    assert submit(racks, "gang", 2, required="rack").status_code == 201
    assert submit(racks, "wide", 2, required="rack").status_code == 201
    cluster.settle()
    gang, wide = cluster.job("team-a", "gang"), cluster.job("team-a", "wide")
    assert gang.status in HOLDING and sorted(gang.nodes) == ["n2", "n3"]
    assert wide.status == Status.PENDING
    assert wide.pending_reason == (
        "no rack has room for all 2 pods (1 GPU each) at once: the roomiest, rack r0, has room "
        "for 1; the node pools for 1 (R23.2)"
    )


@pytest.mark.parametrize(
    ("topology", "message"),
    [
        ({"within": "rack"}, "unknown key 'within': give required and/or preferred"),
        (
            {"required": "zone"},
            f"required: 'zone' is not a topology level of any node pool (levels: {RACK}, rack)",
        ),
        ("rack", "must be an object, not a string"),
    ],
)
def test_r23_2_a_bad_topology_is_a_400_naming_the_field_and_nothing_is_stored(
    racks, topology, message
):
    body = {"project": "team-a", "name": "bad", "gpus": 1, "topology": topology}
    response = racks.post(f"{A}/jobs/", body, format="json")
    assert response.status_code == 400
    assert message in str(response.json()["topology"])
    assert not racks.get(f"{A}/jobs/").json()["results"]


@pytest.mark.parametrize(
    ("path", "body", "field", "message"),
    [
        ("/nodes/n0/", {"labels": {"bad key!": "x"}}, "labels", "a label name is at most 63"),
        ("/nodes/n0/", {"labels": {RACK: "r 1"}}, "labels", "a label value is at most 63"),
        ("/topology/default/", {"levels": [RACK, RACK]}, "levels", "is listed twice"),
        ("/topology/default/", {"levels": []}, "levels", "at least 1 elements"),
        ("/topology/default/", {"levels": [RACK, "rack"]}, "levels", "the short name 'rack'"),
    ],
)
def test_r23_1_bad_labels_or_levels_are_a_400_naming_the_field(racks, path, body, field, message):
    response = racks.patch(f"{A}{path}", body, format="json")
    assert response.status_code == 400, response.content
    assert message in str(response.json()[field])
    assert Node.objects.get(name="n0").labels == {RACK: "r0"}
    assert PoolTopology.objects.get(pool="default").levels == [RACK]


def test_r23_4_deleting_a_pools_levels_keeps_a_required_gang_waiting(racks, cluster):
    assert racks.delete(f"{A}/topology/default/").status_code == 204
    assert submit(racks, "gang", 2, required="rack").status_code == 400  # no level to name now
    assert submit(racks, "pref", 2, preferred="rack").status_code == 400


def test_r23_1_the_kubernetes_inventory_keeps_a_nodes_labels_on_its_row(db):
    v1node = client.V1Node(
        metadata=client.V1ObjectMeta(
            name="gpu-1", labels={RACK: "r7", "nvidia.com/gpu.count": "8"}
        ),
        status=client.V1NodeStatus(
            capacity={"nvidia.com/gpu": "8"}, allocatable={"nvidia.com/gpu": "8"}
        ),
    )
    # the inventory reads the API's JSON (agents.kubernetes.inventory), as the API sends it
    seen = node_status(client.ApiClient().sanitize_for_serialization(v1node), KubernetesConfig())
    assert dict(seen.labels)[RACK] == "r7"
    assert sync_nodes((seen,))
    assert Node.objects.get(name="gpu-1").labels[RACK] == "r7"
    assert sync_nodes((NodeStatus(name="gpu-1", gpus=8, labels=((RACK, "r8"),)),))
    assert Node.objects.get(name="gpu-1").labels == {RACK: "r8"}
