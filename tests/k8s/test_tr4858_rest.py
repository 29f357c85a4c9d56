"""TR-4858 end to end through REST with ALLOT_AGENT=kubernetes on a real control plane (issue 25).

`scripts/replay_scenario.py` drives a live portal whose agent is the Kubernetes agent on the lab
(`portal_lab.allot_lab`: TR-4858's nodes dgx1-1 and dgx1-2 as KWOK nodes). It must print the
in-memory replay's tables line for line, and at every `expect` step the cluster must hold
exactly the planned pods, each bound (`spec.nodeName`) to the node the portal planned and
Running, every shared device held by a Running reservation pod; the evicted jobs' pods are gone.
"""

from __future__ import annotations

import pytest

from portal.cluster.models import Node
from portal.tenancy.services import issue_token
from scheduler_tools.replay import main as replay_in_memory
from tests.k8s.portal_lab import (  # noqa: F401  (fixture_*: the fixtures this module uses)
    GPU_PRODUCT,
    cluster_matches,
    eventually,
    fixture_allot_lab,
    fixture_portal_on_lab,
    reservations,
    shared_devices,
)
from tests.paths import tr4858
from tests.portal.scheduling.test_replay_script import load_script

pytestmark = [pytest.mark.k8s, pytest.mark.django_db(transaction=True)]


def test_tr4858_through_rest_on_a_real_api_server_binds_the_planned_pods(
    portal_on_lab, allot_lab, live_server, cluster_admin, capsys, monkeypatch
):
    core = allot_lab.core
    token = issue_token(cluster_admin, "test")[1]
    assert replay_in_memory([str(tr4858())]) == 0
    expected = capsys.readouterr().out

    script = load_script()
    read_state, steps = script.read_state, []

    def read_state_and_the_cluster(portal, scenario, *words):
        """After each `expect` step: the portal's state, and the cluster checked against it."""
        state = read_state(portal, scenario, *words)
        rows = portal.all("/api/v1/jobs/")
        placed = cluster_matches(core, rows)
        held = {where for where, running in reservations(core).items() if running}
        assert shared_devices(rows) <= held, "a shared device without a Running reservation pod"
        steps.append((placed, rows))
        return state

    monkeypatch.setattr(script, "read_state", read_state_and_the_cluster)
    status = script.main([str(tr4858()), "--url", live_server.url, "--token", token])
    printed = capsys.readouterr()
    assert status == 0, printed.err + printed.out
    assert printed.out == expected  # the allocation tables, step by step
    assert len(steps) == 4

    # §4.8: all sixteen GPUs in use, five fractional jobs on two shared devices
    first = steps[0][0]
    assert len(first) == 13 and set(first.values()) == {"dgx1-1", "dgx1-2"}
    assert len(shared_devices(steps[0][1])) == 2  # 0.6 + 0.4 and 0.5 + 0.3 + 0.2
    # §4.9: team-d's new jobs reclaimed b-4-gg's and c-4-gg's GPUs: their pods were deleted
    assert ("team-b", "b-4-gg-0") in first and ("team-c", "c-4-gg-0") in first
    second = steps[1][0]
    assert ("team-b", "b-4-gg-0") not in second and ("team-c", "c-4-gg-0") not in second
    assert {("team-d", "d-2-gg-0"), ("team-d", "d-3-gg-0")} <= second.keys()
    # §4.10: team-d's jobs deleted, their pods gone, the others' started
    last = steps[3][0]
    assert not [key for key in last if key[0] == "team-d"]
    assert {("team-a", "a-3-gg-0"), ("team-a", "a-4-gg-0")} <= last.keys()

    # The nodes came from the cluster's inventory (GPU feature discovery's product label) ...
    nodes = {n.name: (n.gpus, n.gpu_product, n.gpu_memory_bytes) for n in Node.objects.all()}
    assert nodes == dict.fromkeys(("dgx1-1", "dgx1-2"), (8, GPU_PRODUCT, 32 * 2**30))

    # ... and the rows follow the pods: a cycle more and every placed job is Running.
    portal = script.Portal(live_server.url, token)

    def all_running() -> bool:
        portal.settle()
        rows = portal.all("/api/v1/jobs/")
        holding = [r for r in rows if r["status"] in ("ContainerCreating", "Running")]
        return bool(holding) and all(r["status"] == "Running" for r in holding)

    eventually(all_running, "every placed job Running in the portal")
