"""Issue 36's per-user limit scenario (R21.1) through the REST API: the r21_1 file replayed on a
live portal by scripts/replay_scenario.py sets the project's per-user default limit through
`/api/v1/projects/<name>/user-limits/`, submits every job with its own user's token, and prints
what the core prints (one user's ten jobs held to two running while a teammate's starts, the
pending reasons naming the limit) and meets every expectation."""

from __future__ import annotations

import json

import pytest

from portal.jobs.models import Job
from portal.tenancy.models import UserLimit
from portal.tenancy.services import issue_token
from tests.portal.api.test_replay_resource_scenarios import SCENARIOS, differences_through_rest

pytestmark = pytest.mark.django_db(transaction=True)


def test_r21_1_the_per_user_limit_scenario_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, capsys
):
    (path,) = sorted(SCENARIOS.glob("r21_1_*.json"))
    token = issue_token(cluster_admin, "replay")[1]
    failed = differences_through_rest([path], live_server.url, token, capsys)
    assert not failed, json.dumps(failed, indent=1)
    assert "(R21.1)" in Job.objects.get(name="ann-9").pending_reason  # naming the limit
    (default,) = UserLimit.objects.filter(project__name="team-a")
    assert default.user is None and default.max_gpus == 2
