"""Starting and stopping jobs against the fake API server: pods are created, validated against
the official schema, bound to their planned nodes; a failure in the middle of a gang leaves no
pod of it; repeating a start is harmless."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes.client.exceptions import ApiException

from agents.base import JobSpec, PodSpec
from agents.kubernetes import pods
from agents.kubernetes.inventory import KubernetesConfig, api_client
from tests.agents.kubernetes.fake_api import FakeKubernetes

NOW = datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture
def cluster():
    fake = FakeKubernetes()
    yield fake
    assert fake.invalid == []  # every object the agent sent was valid
    fake.close()


@pytest.fixture
def api(cluster):
    return api_client(KubernetesConfig(host=cluster.url))


def gang() -> JobSpec:
    return JobSpec("team-a", "dist", (PodSpec("dgx1-1", tuple(range(8))),
                                      PodSpec("dgx1-2", tuple(range(8)))), NOW, gpus=8.0, pods=2,
                   image="gcr.io/run-ai-demo/quickstart", user="bob")  # fmt: skip


def test_a_gangs_pods_are_created_and_bound_to_their_planned_nodes(cluster, api):
    names = pods.start_job(api, gang())
    assert names == ["dist-0", "dist-1"]
    assert "allot-team-a" in cluster.namespaces
    placed = {name: pod["spec"]["nodeName"] for (_, name), pod in cluster.pods.items()}
    assert placed == {"dist-0": "dgx1-1", "dist-1": "dgx1-2"}
    assert all(pod["spec"]["schedulerName"] == "allot" for pod in cluster.pods.values())


def test_a_500_in_the_middle_of_a_gang_leaves_no_pod_of_it(cluster, api):
    cluster.fail_binding = {"dist-1"}
    with pytest.raises(ApiException) as failed:
        pods.start_job(api, gang())
    assert failed.value.status == 500
    assert cluster.pods == {}


def test_starting_again_is_harmless(cluster, api):
    pods.start_job(api, gang())
    pods.start_job(api, gang())
    assert len(cluster.pods) == 2


def test_fractions_hold_their_device_with_a_bound_reservation_pod(cluster, api):
    notebook = JobSpec("team-b", "nb", (PodSpec("dgx1-1", (3,), 0.5),), NOW, type="interactive",
                       gpus=0.5, ports=(8888,))  # fmt: skip
    pods.start_job(api, notebook, gpu_memory_bytes={"dgx1-1": 32 * 2**30})
    reservation = cluster.pods[("allot-system", "allot-reservation-dgx1-1-3")]
    assert reservation["spec"]["nodeName"] == "dgx1-1"
    assert cluster.pods[("allot-team-b", "nb-0")]["spec"]["nodeName"] == "dgx1-1"


def test_stop_deletes_the_jobs_pods_only(cluster, api):
    pods.start_job(api, gang())
    other = JobSpec("team-a", "other", (PodSpec("dgx1-1", (0,)),), NOW)
    pods.start_job(api, other)
    pods.stop_job(api, "team-a", "dist", grace_period_s=0)
    assert sorted(name for _, name in cluster.pods) == ["other-0"]


def test_a_gangs_headless_service_comes_with_its_start_and_goes_with_its_stop(cluster, api):
    pods.start_job(api, gang())
    pods.expose(api, gang())
    service = cluster.services[("allot-team-a", "dist")]
    assert service["spec"]["clusterIP"] == "None"
    pods.stop_job(api, "team-a", "dist", job=gang())  # by name, the spec known
    assert cluster.services == {} and cluster.pods == {}
    pods.expose(api, gang())
    pods.stop_job(api, "team-a", "dist")  # by label, after a restart
    assert cluster.services == {}


def test_the_sweep_recreates_a_gangs_headless_service_deleted_outside_allot():
    from agents.kubernetes.sweep import Labelled, Listing, missing

    ports = JobSpec("team-a", "tb", gang().placement, NOW, pods=2, ports=(6006,))
    both = Listing((Labelled("Service", "allot-team-a", "tb", ("team-a", "tb")),
                    Labelled("Service", "allot-team-a", "tb-hosts", ("team-a", "tb"))))  # fmt: skip
    assert missing(both, [ports], "") == []
    ports_only = Listing(both.objects[:1])
    assert missing(ports_only, [ports], "") == [ports]  # its headless one is gone
    assert missing(Listing(()), [gang()], "") == [gang()]
