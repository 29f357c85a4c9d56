"""The agent's pod watch against a real compaction (issue 25): 410 Gone, relist, nothing lost.

etcd's history is compacted up to its current revision and etcd restarted: the API server's
watch cache finds its own position compacted, lists again and ends every watch it serves. The
agent's watch, resumed from the last resourceVersion it saw (now older than anything the cache
keeps), gets a real `410 Gone: too old resource version`, and the agent lists again. A pod that
finished while the agent had no watch open shows as finished after the relist, the job that
kept running stays Running, and a job submitted afterwards runs (the new watch works).
"""

from __future__ import annotations

import logging
import threading

import pytest
from kubernetes import client

from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    Rest,
    cluster_matches,
    compact_etcd,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    restart_etcd,
)

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def rest(portal_on_lab, api, cluster_admin) -> Rest:
    made = Rest(api(cluster_admin))
    made.settle()  # a first cycle reads the cluster's nodes (submissions are checked against them)
    return made


def test_a_compacted_watch_gets_410_the_agent_relists_and_misses_no_transition(
    rest, portal_on_lab, allot_lab, monkeypatch, caplog
):
    agent, core = portal_on_lab, allot_lab.core
    caplog.set_level(logging.INFO, logger="agents.kubernetes.watch")
    rest.project("watching", 4)
    rest.submit("watching", "steady", 1)
    rest.settle()
    rest.submit("watching", "finisher", 1)
    rest.settle()
    cluster_matches(core, rest.all_running())
    assert agent.watcher.synced.is_set() and agent.watcher.error == ""
    relists = agent.watcher.relists

    # Hold the agent's next watch request back (its current stream stays open), so that the
    # pod's transition below happens while the agent has no watch open.
    watch_once, waiting, release = agent.watcher._watch_once, threading.Event(), threading.Event()

    def held_watch_once() -> None:
        waiting.set()
        release.wait(60)
        watch_once()

    monkeypatch.setattr(agent.watcher, "_watch_once", held_watch_once)
    for _ in range(3):  # history newer than the pods' watch cache has seen, to compact
        core.create_namespaced_config_map(
            "default", client.V1ConfigMap(metadata=client.V1ObjectMeta(generate_name="compact-"))
        )
    compact_etcd(allot_lab)
    restart_etcd(allot_lab)
    assert waiting.wait(20), "the API server never ended the agent's watch"

    # finisher's container exits 0 while nobody watches (as KWOK would report it)
    finished = {"phase": "Succeeded", "containerStatuses": [{
        "name": "main", "image": "python:3.11-slim", "imageID": "", "ready": False,
        "restartCount": 0, "started": False,
        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
    }]}  # fmt: skip
    core.patch_namespaced_pod_status("finisher-0", "allot-watching", {"status": finished})
    release.set()

    eventually(lambda: agent.watcher.relists > relists, "the agent to list the pods again")
    assert "pod watch expired (410 Gone): relisting" in caplog.text
    assert agent.watcher.error == ""
    assert rest.status_becomes("watching", "finisher", "Succeeded")["status"] == "Succeeded"
    assert rest.job("watching", "steady")["status"] == "Running"

    rest.submit("watching", "after", 1)  # the watch resumed from the relist's resourceVersion
    rest.settle()
    rows = rest.all_running()
    assert {job["name"] for job in rows} == {"steady", "after"}
    cluster_matches(core, rows)
