"""The agent counts its failed API calls (verb, resource, code) and its back-offs (issue 35),
against the fake API server: a 500 on one pod's creation, a server gone away, and the answers
it takes as done (404 to a delete, 409 AlreadyExists to a create) that are no failures."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from agents.kubernetes import telemetry
from tests.agents.kubernetes.conftest import make_agent
from tests.agents.kubernetes.test_agent import NS, job, synced


def test_verbs_and_resources_are_named_as_the_api_server_names_them():
    def named(call, method: str, query=None) -> tuple[str, str]:
        return telemetry.verb(method, call, query), telemetry.resource(call)

    assert named("/api/v1/namespaces/{namespace}/pods", "POST") == ("create", "pods")
    assert named("/api/v1/namespaces/{namespace}/pods/{name}/binding", "POST") == (
        "create", "pods/binding",
    )  # fmt: skip
    assert named("/api/v1/namespaces/{namespace}/pods/{name}/log", "GET") == ("get", "pods/log")
    assert named("/api/v1/pods", "GET", [("watch", True)]) == ("watch", "pods")
    assert named("/api/v1/nodes", "GET") == ("list", "nodes")
    assert named("/api/v1/namespaces/{name}", "GET") == ("get", "namespaces")
    assert named("/api/v1/namespaces/{namespace}/services", "DELETE") == (
        "deletecollection", "services",
    )  # fmt: skip
    assert named("/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}",
                 "DELETE") == ("delete", "ingresses.networking.k8s.io")  # fmt: skip
    assert named("/apis/batch/v1/namespaces/{namespace}/jobs/{name}", "PATCH") == (
        "patch", "jobs.batch",
    )  # fmt: skip


def test_a_pod_creation_answered_500_counts_one_error_and_one_job_back_off(agent, cluster):
    agent.take_counts()  # what setting up the agent cost, if anything
    cluster.fail_create = {"train-0"}
    agent.start(job())
    counts = agent.take_counts()
    assert counts.api_errors == {("create", "pods", "500"): 1}
    assert counts.backoffs == {"job": 1} and counts.backoff_s == {"job": 1.0}
    assert agent.take_counts().api_errors == {}  # taken: counted from zero again


def test_answers_taken_as_done_are_not_errors(agent, cluster):
    agent.start(job())
    synced(agent, cluster)
    agent.take_counts()
    core = client.CoreV1Api(agent.api)
    with pytest.raises(client.ApiException) as there:
        core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    assert there.value.status == 409  # AlreadyExists: done
    with pytest.raises(client.ApiException) as gone:
        core.delete_namespaced_pod("never-was-0", NS)
    assert gone.value.status == 404  # gone: done
    with pytest.raises(client.ApiException) as missing:
        core.read_namespaced_pod("never-was-0", NS)
    assert missing.value.status == 404  # a read of what is not there is a failure
    assert agent.take_counts().api_errors == {("get", "pods", "404"): 1}


def test_a_server_gone_counts_calls_without_answer_and_the_agents_and_watchs_back_offs(
    cluster, clock
):
    agent = make_agent(cluster, clock)
    try:
        agent.observe()
        agent.take_counts()
        cluster.go_down()
        agent.observe()  # the node list gets no answer: the whole agent backs off
        counts = agent.take_counts()
        assert counts.api_errors.get(("list", "nodes", "none")) == 1
        assert counts.backoffs.get("agent") == 1 and counts.backoff_s["agent"] == 1.0
        assert "retrying in 1 s" in agent.problem
        deadline = time.monotonic() + 20
        while "watch" not in counts.backoffs and time.monotonic() < deadline:
            time.sleep(0.05)  # the watch thread finds the server gone in its own time
            counts = agent.take_counts()
        assert counts.backoffs.get("watch", 0) >= 1
    finally:
        agent.close()
