"""scripts/replay_scenario.py against a live portal prints what `scheduler_tools.replay` prints."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from portal.tenancy.services import issue_token
from scheduler_tools.replay import main as replay_in_memory
from tests.portal.scheduling.conftest import TR4858

pytestmark = pytest.mark.django_db(transaction=True)
SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "replay_scenario.py"


def load_script():
    spec = importlib.util.spec_from_file_location("replay_scenario", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def token(cluster_admin) -> str:
    return issue_token(cluster_admin, "test")[1]


def test_tr4858_through_the_rest_api_prints_the_same_tables_as_the_pure_replay(
    live_server, token, capsys
):
    path = str(TR4858)
    assert replay_in_memory([path]) == 0
    expected = capsys.readouterr().out
    status = load_script().main([path, "--url", live_server.url, "--token", token])
    printed = capsys.readouterr()
    assert status == 0, printed.err
    assert printed.out == expected
    assert "team-d                 0/8           0        0" in printed.out  # after §4.10


def test_a_wrong_expectation_exits_1_and_names_the_mismatch(live_server, token, tmp_path, capsys):
    scenario = {
        "name": "wrong",
        "nodes": [{"name": "n1", "gpus": 2}],
        "projects": [{"name": "team-a", "quota": 2}],
        "steps": [
            {"submit": [{"name": "a-1", "project": "team-a", "gpus": 1}]},
            {"expect": {"allocated": {"team-a": 2}}},
        ],
    }
    path = tmp_path / "wrong.json"
    path.write_text(__import__("json").dumps(scenario))
    assert load_script().main([str(path), "--url", live_server.url, "--token", token]) == 1
    assert "FAIL step 1: allocated team-a = 1, want 2" in capsys.readouterr().out


def test_an_unreachable_portal_or_a_bad_file_exits_2_with_one_line(token, tmp_path, capsys):
    script = load_script()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert script.main([str(bad), "--url", "http://127.0.0.1:9", "--token", token]) == 2
    path = str(TR4858)
    assert script.main([path, "--url", "http://127.0.0.1:9", "--token", token]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 2 and "not JSON" in errors[0] and "cannot reach" in errors[1]
