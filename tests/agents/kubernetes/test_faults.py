"""Issue 25 against the fake API server: the faults a real control plane (tests/k8s) cannot
produce on demand, and the agent's bookkeeping with a clock the test moves by hand.

- a stop whose delete-collection of Services is answered 405 (older servers) falls back to
  deleting them by name, and holds up no other job (item 1);
- a permanent failure of Allot's own (a command that cannot be split) or a transient one of one
  object (a 500) is that job's, never another's (item 1);
- a new namespace's "No API token found for service account" is retried at once, then per job
  (item 5);
- objects reconcile both ways: a Service no job claims is deleted after the grace period, a
  started job's vanished Service is recreated, a gang missing a pod fails (item 2);
- a bearer token file is read again when it changes, and the credential settings fail loudly
  (item 4).
"""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from agents.kubernetes import faults
from tests.agents.kubernetes.conftest import make_agent
from tests.agents.kubernetes.test_agent import NS, job, observed, synced

KEY = ("team-a", "nb")


def names(store) -> list[str]:
    return sorted(name for ns, name in store if ns == NS)


def test_a_stop_answered_405_deletes_the_service_by_name_and_blocks_nothing(agent, cluster):
    """The issue's repro: a job with ports, deleted, then another job submitted."""
    cluster.no_service_deletecollection = True
    agent.start(job("nb", type="interactive", ports=(8888,)))
    agent.start(job("other", devices=(1,)))
    agent.stop(*KEY)
    assert names(cluster.services) == []  # deleted one by one
    agent.stop("team-a", "other")  # sorted after "nb": once frozen behind it
    agent.start(job("next", devices=(2,)))
    assert names(cluster.pods) == ["next-0"]
    assert agent.observe().problem == ""


def test_a_start_that_fails_for_good_fails_that_job_alone(agent, cluster):
    agent.start(job("bad", command='echo "no closing quote'))
    agent.start(job("good", devices=(1,)))
    assert names(cluster.pods) == ["good-0"]
    seen = observed(agent, cluster, ("team-a", "bad"))
    assert seen.phase == "Failed" and "No closing quotation" in seen.message
    assert agent.observe().problem == ""


def test_a_new_namespaces_missing_token_is_retried_at_once(agent, cluster):
    cluster.no_token_yet = {NS: 2}  # the service account's token comes a moment later
    agent.start(job())
    assert names(cluster.pods) == ["train-0"]  # no cycle lost, no failure
    assert agent.observe().problem == ""


def test_a_namespace_set_up_slowly_backs_that_job_off_and_then_starts_it(agent, cluster, clock):
    cluster.no_token_yet = {NS: 100}
    agent.start(job())
    agent.start(replace(job("other", devices=(1,)), project="team-b"))  # issue 40: not on 0
    assert ("allot-team-b", "other-0") in cluster.pods  # not held up
    seen = agent.observe()
    assert seen.problem == ""
    status = seen.jobs[("team-a", "train")]
    assert status.phase == "ContainerCreating"
    assert "waiting for namespace allot-team-a" in status.message
    assert "No API token found" in status.message
    cluster.no_token_yet = {}
    clock.now += 1
    agent.observe()
    assert names(cluster.pods) == ["train-0"]


def test_a_namespace_that_never_gets_its_account_fails_the_job_after_a_while(cluster, clock):
    """Past namespace_setup_s a 403 "error looking up service account" is for good; a 500 is
    still the server's passing trouble."""
    agent = make_agent(cluster, clock, namespace_setup_s=10)
    try:
        cluster.no_account_yet = {NS: 1000}
        agent.start(job())
        assert agent.observe().jobs[("team-a", "train")].phase == "ContainerCreating"
        for _ in range(3):
            clock.now += 6
            agent.observe()
        status = observed(agent, cluster)
        assert status.phase == "Failed"
        assert "error looking up service account allot-team-a/default" in status.message
        cluster.no_account_yet, cluster.no_token_yet = {}, {NS: 1000}
        agent.start(job("slow"))
        for _ in range(5):
            clock.now += 60
            agent.observe()
        status = agent.observe().jobs[("team-a", "slow")]
        assert status.phase == "ContainerCreating" and "retrying" in status.message
    finally:
        agent.close()


def test_the_pod_of_an_earlier_run_still_terminating_is_waited_for(agent, cluster, clock):
    cluster.namespaces[NS] = {"metadata": {"name": NS}}
    terminating = {"name": "train-0", "namespace": NS, "deletionTimestamp": "2026-11-01T00:00:00Z"}
    cluster.pods[(NS, "train-0")] = {
        "metadata": terminating, "spec": {"containers": [{"name": "main", "image": "x"}]},
        "status": {"phase": "Running"},
    }  # fmt: skip
    agent.start(job())
    status = agent.observe().jobs[("team-a", "train")]
    assert status.phase == "ContainerCreating" and "still terminating" in status.message
    del cluster.pods[(NS, "train-0")]  # gone at last
    clock.now += 1
    agent.observe()
    assert "deletionTimestamp" not in cluster.pods[(NS, "train-0")]["metadata"]


def test_a_service_no_job_claims_is_deleted_after_the_grace_period(cluster, clock):
    """After a restart (a new agent object) the job is gone from the database: its Service,
    left behind by a stop that was lost, goes; a job the new agent runs keeps its own."""
    first = make_agent(cluster, clock)
    first.start(job("nb", type="interactive", ports=(8888,)))
    first.start(job("kept", type="interactive", ports=(8080,), devices=(1,)))
    first.close()
    with cluster.cond:  # the stop that deleted its pods, then was lost
        cluster.delete(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": ["allot.io/job=nb"]})
    restarted = make_agent(cluster, clock, orphan_grace_s=60, sweep_interval_s=0)
    try:
        restarted.observe()  # the portal's reconciliation observes first, ...
        synced(restarted, cluster)
        restarted.observe()
        assert names(cluster.services) == ["kept", "nb"]  # ... within the grace: kept
        clock.now += 30
        restarted.observe()
        clock.now += 30
        restarted.observe()
        assert names(cluster.services) == ["kept"]  # its pods claim it
    finally:
        restarted.close()


def test_a_vanished_service_of_a_started_job_is_recreated(cluster, clock):
    agent = make_agent(cluster, clock, sweep_interval_s=0)
    try:
        agent.start(job("nb", type="interactive", ports=(8888,)))
        del cluster.services[(NS, "nb")]
        synced(agent, cluster)
        agent.observe()
        assert names(cluster.services) == ["nb"]
    finally:
        agent.close()


def test_a_gang_missing_a_pod_fails_with_the_reason(agent, cluster, clock):
    agent.start(job("dist", pods=2, gpus=8, devices=tuple(range(8))))
    for name in ("dist-0", "dist-1"):
        cluster.set_pod_status(NS, name, "Running", running=True)
    assert observed(agent, cluster, ("team-a", "dist")).phase == "Running"
    with cluster.cond:
        cluster.delete(f"/api/v1/namespaces/{NS}/pods/dist-1", {})
    clock.now += 30
    status = observed(agent, cluster, ("team-a", "dist"))
    assert status.phase == "Failed"
    assert status.message == "pod dist-1 was deleted outside Allot"


def test_the_bearer_token_is_read_again_when_its_file_changes(cluster, clock, tmp_path):
    token = tmp_path / "token"
    token.write_text("first\n")
    agent = make_agent(cluster, clock, token_file=str(token))
    try:
        agent.observe()
        assert cluster.authorizations[-1] == "Bearer first"
        token.write_text("second\n")
        os.utime(token, ns=(1, 2))  # a new mtime however coarse the filesystem's clock
        agent.observe()
        assert cluster.authorizations[-1] == "Bearer second"
    finally:
        agent.close()


def test_failures_are_judged_by_kind():
    from kubernetes.client.exceptions import ApiException
    from urllib3.exceptions import MaxRetryError

    def api(status, message=""):
        exc = ApiException(status=status, reason="x")
        exc.body = f'{{"message": "{message}"}}'
        return exc

    assert faults.kind(MaxRetryError(None, "/")) == "unreachable"
    assert faults.kind(api(401)) == "unreachable"
    assert [faults.kind(api(code)) for code in (429, 500, 503)] == ["transient"] * 3
    assert [faults.kind(api(code)) for code in (400, 403, 404, 405, 409, 422)] == [
        "permanent"] * 6  # fmt: skip
    looking = 'pods \\"p\\" is forbidden: error looking up service account a/default: not found'
    assert faults.kind(api(403, looking)) == "setting-up"
    assert faults.kind(ValueError("No closing quotation")) == "permanent"


def test_the_credential_settings_name_a_file_that_cannot_be_read(monkeypatch, tmp_path):
    """The portal's side of item 4: ALLOT_K8S_*_FILE settings fail loudly, and a client key is
    kept from Jupyter sessions like every other secret file."""
    from django.core.exceptions import ImproperlyConfigured

    from portal import settings

    monkeypatch.setenv("ALLOT_K8S_CA_FILE", str(tmp_path / "missing.crt"))
    with pytest.raises(ImproperlyConfigured, match=r"^ALLOT_K8S_CA_FILE=.*not a readable file"):
        settings.envfile("ALLOT_K8S_CA_FILE")
    key = tmp_path / "client.key"
    key.write_text("-----BEGIN EC PRIVATE KEY-----\n")
    monkeypatch.setenv("ALLOT_K8S_CLIENT_KEY_FILE", str(key))
    kept: list = []
    monkeypatch.setattr(settings, "SECRET_FILES", kept)
    assert settings.envfile("ALLOT_K8S_CLIENT_KEY_FILE", secret=True) == str(key)
    assert kept == [key]


def died_starting(cluster, clock, gang, *, created: int, bound: int) -> None:
    """What a process that died in the middle of starting `gang` left: its first `created`
    pods, the first `bound` of them bound."""
    from kubernetes import client

    from agents.kubernetes import manifests, pods

    first = make_agent(cluster, clock)
    core = client.CoreV1Api(first.api)
    pods.ensure_namespace(core, NS, manifests.namespace("team-a"))
    for index, pod in enumerate(manifests.job_pods(gang)[:created]):
        core.create_namespaced_pod(NS, pod)
        if index < bound:
            pods.bind(core, NS, pod["metadata"]["name"], gang.placement[index].node)
    first.close()


def test_a_gang_half_started_by_a_process_that_died_is_completed_by_the_next(cluster, clock):
    """Not reported (its pods are not all there), the portal's reconciliation starts it."""
    gang = job("dist", pods=2, gpus=8, devices=tuple(range(8)))
    died_starting(cluster, clock, gang, created=1, bound=1)
    cluster.set_pod_status(NS, "dist-0", "Running", running=True)
    agent = make_agent(cluster, clock)
    try:
        agent.observe()
        synced(agent, cluster)
        assert ("team-a", "dist") not in agent.observe().jobs  # not taken for Running
        agent.start(gang)  # what the reconciliation does with a holding job it is not told of
        assert [b[1:] for b in cluster.bindings] == [("dist-0", "dgx1-1"), ("dist-1", "dgx1-2")]
    finally:
        agent.close()


def test_a_pod_created_but_never_bound_is_bound_by_the_next_process(cluster, clock):
    died_starting(cluster, clock, job(), created=1, bound=0)
    agent = make_agent(cluster, clock)
    try:
        agent.observe()
        synced(agent, cluster)
        assert ("team-a", "train") not in agent.observe().jobs
        agent.start(job())
        assert cluster.pods[(NS, "train-0")]["spec"]["nodeName"] == "dgx1-1"
    finally:
        agent.close()


def test_the_pods_of_a_half_started_job_no_one_holds_are_swept(cluster, clock):
    gang = job("dist", pods=2, gpus=8, devices=tuple(range(8)))
    died_starting(cluster, clock, gang, created=1, bound=1)
    agent = make_agent(cluster, clock, orphan_grace_s=60, sweep_interval_s=0)
    try:
        agent.observe()
        synced(agent, cluster)
        agent.observe()
        assert names(cluster.pods) == ["dist-0"]  # within the grace period
        clock.now += 60
        agent.observe()
        assert names(cluster.pods) == []
    finally:
        agent.close()
