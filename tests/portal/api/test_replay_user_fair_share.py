"""Issue 36's user fair share scenarios (R21.4-R21.8) through the REST API: each r21_4_* and
r21_5_* file of tests/scheduler/scenarios/ replayed on one live portal by
scripts/replay_scenario.py (`--reset` between them), every job submitted by its own user's
token, prints what the core prints (tables, pending reasons naming the user share, FAIL lines)
and meets every expectation, the one with the setting off included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portal.tenancy.models import Project
from portal.tenancy.services import issue_token
from tests.portal.api.test_replay_resource_scenarios import SCENARIOS, differences_through_rest

pytestmark = pytest.mark.django_db(transaction=True)


def user_scenarios() -> list[Path]:
    return sorted(SCENARIOS.glob("r21_4_*.json")) + sorted(SCENARIOS.glob("r21_5_*.json"))


def test_the_user_fair_share_scenarios_are_the_four_of_issue_36():
    names = [p.stem for p in user_scenarios()]
    assert len(names) == 4, names
    assert any("without_user_fair_share" in name for name in names)


def test_r21_every_user_fair_share_scenario_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, capsys
):
    token = issue_token(cluster_admin, "replay")[1]
    failed = differences_through_rest(user_scenarios(), live_server.url, token, capsys)
    assert not failed, json.dumps(failed, indent=1)
    weighted = json.loads((SCENARIOS / f"{user_scenarios()[1].stem}.json").read_text())
    assert weighted["projects"][0]["user_weights"] == {"ann": 3}
    # the last file replayed leaves the setting off in the portal, as the file says
    assert Project.objects.get(name="team-a").user_fair_share is False
