"""Issue 36's budget scenarios through the REST API: each r20_* file of
tests/scheduler/scenarios/ replayed on one live portal with the replay clock on
(`ALLOT_REPLAY_CLOCK`) by scripts/replay_scenario.py (`--reset` between them). The script sets
the portal's clock to each step's time through `/api/v1/scheduler/clock/`, makes the budgets
through `/api/v1/budgets/` (a scenario term as the portal's term of the same days) and prints
what the core prints (tables, pending reasons naming the budget, FAIL lines), the GPU-hours
each budget used and the 80 % and 100 % notices read back through REST included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portal.budgets.models import BudgetNotice
from portal.jobs.models import JobEvent
from portal.tenancy.services import issue_token
from tests.portal.api.test_replay_resource_scenarios import (
    SCENARIOS,
    differences_through_rest,
    load_script,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def replay_clock(settings):
    settings.ALLOT_REPLAY_CLOCK = True


def budget_scenarios() -> list[Path]:
    return sorted(SCENARIOS.glob("r20_*.json"))


def test_the_budget_scenarios_are_the_four_of_issue_36():
    names = [p.stem for p in budget_scenarios()]
    assert len(names) == 4, names
    assert all("budgets" in json.loads(p.read_text()) for p in budget_scenarios())


def test_r20_every_budget_scenario_passes_through_rest_as_through_the_core(
    live_server, cluster_admin, capsys, replay_clock
):
    token = issue_token(cluster_admin, "replay")[1]
    failed = differences_through_rest(budget_scenarios(), live_server.url, token, capsys)
    assert not failed, json.dumps(failed, indent=1)
    # the last file (r20_5, a soft budget) announced through the portal's own notices and events
    assert list(BudgetNotice.objects.values_list("threshold", flat=True)) == [80, 100]
    events = JobEvent.objects.filter(kind="budget").order_by("id")
    assert [e.message.split(" (")[0] for e in events][-2:] == [
        "project team-a's budget 'term' reached 80 %",
        "project team-a's budget 'term' reached 100 %",
    ]


def test_a_scenario_that_moves_its_clock_is_refused_when_the_portal_clock_is_not_settable(
    live_server, cluster_admin, capsys
):
    """Without ALLOT_REPLAY_CLOCK the clock resource is a 404: exit 2 and one line saying so."""
    token = issue_token(cluster_admin, "replay")[1]
    (path,) = sorted(SCENARIOS.glob("r20_2_*.json"))
    status = load_script().main([str(path), "--url", live_server.url, "--token", token, "--reset"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and "the portal's clock is not settable" in err[0], err
