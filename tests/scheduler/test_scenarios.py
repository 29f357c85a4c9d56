"""Acceptance suite: every scenario file under ``scenarios/`` replays with all expectations met.

The files are written from docs/rules.md (each names its rules in ``source`` and shows its
arithmetic in ``notes``); a failure here means the scheduler and the rule book disagree.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from scheduler_tools.replay import replay_file
from tests.paths import tr4858

HERE = Path(__file__).resolve().parent
SCENARIOS = sorted((HERE / "scenarios").glob("*.json"))
SHARED_TR4858 = tr4858()
RULE_SENTENCE = re.compile(r"^(r\d+_\d+|e\d+)_[a-z0-9]+(_[a-z0-9]+)+$")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_scenario_meets_every_expectation(path: Path) -> None:
    result = replay_file(path)
    assert result.failures == [], "\n".join([*result.failures, "", *result.report])


def test_there_are_at_least_45_scenarios_each_named_by_its_rule() -> None:
    assert len(SCENARIOS) >= 45
    for path in SCENARIOS:
        data = json.loads(path.read_text())
        assert RULE_SENTENCE.match(path.stem), f"{path.name}: not a rule-led snake_case sentence"
        assert data["name"] == path.stem, path.name
        assert re.search(r"\b[RE]\d+", data["source"]), f"{path.name}: source cites no rule"


def test_shared_tr4858_scenario_passes() -> None:
    result = replay_file(SHARED_TR4858)
    assert result.failures == [], "\n".join(result.failures)
