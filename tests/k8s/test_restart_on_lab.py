"""A portal restart in the middle of stops and starts (issue 25).

The scheduling cycle commits its decisions, then carries them out on the cluster; the process
that runs it (a Celery worker) may die anywhere in between. Here it dies at the worst places:
in the middle of a reclaim's stops (the victim's pods and Service deleted, its Ingress not) and
in the middle of the starts that follow. Each time the process's agent is thrown away with
everything it knew, and a new one (a new process, its pod watch running) carries on from the
database alone.

Afterwards the cluster must hold exactly the pods the database plans, all Running where
planned (a gang whole or not at all, R6.1), no Service or Ingress of a job that does not run
(the sweep's, after its grace period), and no job may have been started twice: a job that ran
throughout keeps its pods (same UIDs) and each job's start is recorded once.
"""

from __future__ import annotations

import dataclasses

import pytest
from kubernetes import client

from agents.kubernetes.agent import KubernetesAgent
from portal.scheduling import agent as agent_module
from portal.scheduling.agent import kubernetes_config
from portal.scheduling.settle import settle
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    Rest,
    cluster_matches,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    job_pods,
    running_pods,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]


class Crash(BaseException):
    """The process dies here (a BaseException: no `except Exception` of the agent runs)."""


def crash_when(agent: KubernetesAgent, predicate) -> list[str]:
    """Make `agent`'s process die at the first API request `predicate(method, path, query,
    name)` matches (`name`: of the object sent); the requests it sent, as `METHOD path`."""
    sent: list[str] = []
    call_api = agent.api.call_api

    def call(resource_path, method, path_params=None, query_params=None, header_params=None,
             body=None, *args, **kwargs):  # fmt: skip
        path = resource_path.format(**(path_params or {}))
        name = (body or {}).get("metadata", {}).get("name", "") if isinstance(body, dict) else ""
        if method != "GET":
            sent.append(f"{method} {path}")
        if predicate(method, path, dict(query_params or ()), name):
            raise Crash(f"{method} {path} {name}")
        return call_api(resource_path, method, path_params, query_params, header_params, body,
                        *args, **kwargs)  # fmt: skip

    agent.api.call_api = call
    return sent


def restarted(**overrides) -> KubernetesAgent:
    """A new process's agent, from the settings (and `overrides` of its config where the agent
    has those settings), its pod watch synced: another worker that has been running."""
    old = agent_module._agent
    if old is not None:
        old.close()
    config = kubernetes_config()
    known = {field.name for field in dataclasses.fields(config)}
    config = dataclasses.replace(config, **{k: v for k, v in overrides.items() if k in known})
    made = KubernetesAgent(config)
    made.watcher.start()
    assert made.watcher.synced.wait(10)
    agent_module._agent = made
    return made


def exposed(api_client: client.ApiClient) -> set[tuple[str, str, str]]:
    """(kind, namespace, name) of every Service and Ingress Allot made."""
    selector = "app.kubernetes.io/managed-by=allot"
    core, networking = client.CoreV1Api(api_client), client.NetworkingV1Api(api_client)
    services = core.list_service_for_all_namespaces(label_selector=selector).items
    ingresses = networking.list_ingress_for_all_namespaces(label_selector=selector).items
    return {("Service", s.metadata.namespace, s.metadata.name) for s in services} | {
        ("Ingress", i.metadata.namespace, i.metadata.name) for i in ingresses
    }


def uids(core: client.CoreV1Api, namespace: str) -> dict[str, str]:
    return {p.metadata.name: p.metadata.uid for p in core.list_namespaced_pod(namespace).items}


def dies_stopping_l3(agent: KubernetesAgent) -> list[str]:
    """The process dies deleting l3's Ingress (its pods and Service are deleted by then)."""
    return crash_when(agent, lambda method, path, query, name: method == "DELETE"
                      and path.endswith("/allot-lender/ingresses/l3"))  # fmt: skip


def dies_creating(agent: KubernetesAgent, pod: str, binding: bool = False) -> list[str]:
    """The process dies creating `pod` of project owner (or its binding)."""
    where = f"/api/v1/namespaces/allot-owner/pods{f'/{pod}/binding' if binding else ''}"
    return crash_when(agent, lambda method, path, query, name: method == "POST"
                      and path == where and name == pod)  # fmt: skip


@pytest.fixture
def reclaim_under_way(portal_on_lab, allot_lab, api, cluster_admin):
    """lender runs l0..l3 (l3 with a Service and an Ingress) on all 16 GPUs; owner, quota 12,
    has just submitted `gang` (2 pods x 4 GPUs) and `solo` (4 GPUs): the next cycle evicts l3,
    l2 and l1 and starts gang and solo. The first process dies stopping l3. Yields (the REST
    client, the lender's pod UIDs before)."""
    core = allot_lab.core
    rest = Rest(api(cluster_admin))
    rest.settle()
    rest.project("lender", 4)
    rest.project("owner", 12)
    for name in ("l0", "l1", "l2"):
        rest.submit("lender", name, 4)
        rest.settle()
    rest.submit("lender", "l3", 4, ports=[8888], service_type="ingress")
    rest.settle()
    cluster_matches(core, rest.all_running())
    assert ("Ingress", "allot-lender", "l3") in exposed(allot_lab.api_client)
    before = uids(core, "allot-lender")
    rest.submit("owner", "gang", 4, pods=2)
    rest.submit("owner", "solo", 4)
    first = dies_stopping_l3(portal_on_lab)
    with pytest.raises(Crash):
        settle(portal_on_lab)
    assert "DELETE /api/v1/namespaces/allot-lender/services/l3" in first, first
    statuses = {(job["project"], job["name"]): job["status"] for job in rest.jobs()}
    assert statuses[("lender", "l3")] == "Pending"  # committed before the cluster was told
    assert ("Ingress", "allot-lender", "l3") in exposed(allot_lab.api_client)
    return rest, before


def carry_on(rest: Rest, core: client.CoreV1Api, timeout: float = 30) -> dict:
    """A third process (quick sweep) settles; the pods then on the cluster, as planned."""
    restarted(orphan_grace_s=1.0, sweep_interval_s=0.0)
    return cluster_matches(core, rest.all_running(timeout=timeout), timeout=timeout)


def test_a_restart_in_the_middle_of_stops_and_starts_leaves_no_orphan_and_starts_nothing_twice(
    reclaim_under_way, allot_lab
):
    rest, before = reclaim_under_way
    core = allot_lab.core
    # The second process dies before it created solo's pod (having stopped, by their labels,
    # whatever of l1 and l2 the first left: it carried the stops out together with l3's).
    second = dies_creating(restarted(), "solo-0")
    with pytest.raises(Crash):
        settle(agent_module._agent)
    assert "POST /api/v1/namespaces/allot-owner/pods/solo-0/binding" not in second, second

    placed = carry_on(rest, core)  # exactly the planned pods, Running where planned
    assert set(placed) == {("lender", "l0-0"), ("owner", "gang-0"), ("owner", "gang-1"),
                           ("owner", "solo-0")}  # fmt: skip
    assert uids(core, "allot-lender") == {"l0-0": before["l0-0"]}  # l0 ran on, never restarted

    def no_orphan() -> bool:
        rest.settle()  # the sweep runs as the agent observes
        # what stays is the running gang's headless Service (its pods' DNS names, issue 33)
        return exposed(allot_lab.api_client) == {("Service", "allot-owner", "gang")}

    eventually(no_orphan, "l3's Ingress, which the first process left, to be swept")
    for job in rest.jobs():
        starts = [e for e in rest.events(job["project"], job["name"]) if e["kind"] == "scheduled"]
        assert len(starts) == 1, (job["name"], starts)  # evicted jobs wait, none started twice
    assert agent_module._agent.problem == ""


def test_a_gang_half_created_when_the_process_died_is_completed_by_the_next(
    reclaim_under_way, allot_lab
):
    rest, _ = reclaim_under_way
    second = dies_creating(restarted(), "gang-1")
    with pytest.raises(Crash):
        settle(agent_module._agent)
    assert "POST /api/v1/namespaces/allot-owner/pods/gang-0/binding" in second, second
    eventually(lambda: ("owner", "gang-0") in running_pods(allot_lab.core), "gang-0 Running")
    placed = carry_on(rest, allot_lab.core, timeout=10)
    assert {("owner", "gang-0"), ("owner", "gang-1")} <= placed.keys()


def test_a_pod_created_but_not_bound_when_the_process_died_is_bound_by_the_next(
    reclaim_under_way, allot_lab
):
    rest, _ = reclaim_under_way
    with pytest.raises(Crash):
        dies_creating(restarted(), "solo-0", binding=True)
        settle(agent_module._agent)
    assert job_pods(allot_lab.core)[("owner", "solo-0")] is None  # created, bound nowhere
    carry_on(rest, allot_lab.core, timeout=10)
