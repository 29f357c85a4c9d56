"""Issue 38's topology scenarios through the REST API: each r23_* file of
tests/scheduler/scenarios/ replayed on one live portal by scripts/replay_scenario.py (`--reset`
between them): the nodes' labels and each pool's levels set through REST (`/api/v1/nodes/`,
`/api/v1/topology/`), every job submitted with its `topology`; the portal prints what the core
prints (tables, pending reasons naming the level and the largest free domain, FAIL lines) and
meets every expectation, the domains a gang landed in included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portal.cluster.models import Node, PoolTopology
from portal.tenancy.services import issue_token
from tests.portal.api.test_replay_resource_scenarios import SCENARIOS, differences_through_rest

pytestmark = pytest.mark.django_db(transaction=True)


def topology_scenarios() -> list[Path]:
    return sorted(SCENARIOS.glob("r23_*.json"))


def test_the_topology_scenarios_are_the_five_of_issue_38():
    names = [p.stem for p in topology_scenarios()]
    assert len(names) == 5, names
    assert all("topology" in json.loads(p.read_text()) for p in topology_scenarios())


def test_r23_every_topology_scenario_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, capsys
):
    token = issue_token(cluster_admin, "replay")[1]
    failed = differences_through_rest(topology_scenarios(), live_server.url, token, capsys)
    assert not failed, json.dumps(failed, indent=1)
    # the last file replayed leaves its own levels and labels in the portal, and no other pool's
    last = json.loads(topology_scenarios()[-1].read_text())
    assert dict(PoolTopology.objects.values_list("pool", "levels")) == last["topology"]
    assert {n.name: n.labels for n in Node.objects.all()} == {
        n["name"]: n.get("labels", {}) for n in last["nodes"]
    }
