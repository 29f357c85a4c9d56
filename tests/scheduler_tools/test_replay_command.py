"""`python -m scheduler_tools.replay`: exit codes, tables and failure lines (issue: Step 1)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scheduler_tools.replay import main, replay_file
from tests.paths import tr4858

ROOT = Path(__file__).resolve().parents[2]
TR4858 = tr4858()


def run(*args):
    return subprocess.run(
        [sys.executable, "-m", "scheduler_tools.replay", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def tr4858():
    return json.loads(TR4858.read_text())


def test_it_replays_tr4858_and_prints_the_report_tables(tr4858):
    result = run(TR4858)
    assert result.returncode == 0, result.stdout + result.stderr
    tables = result.stdout.split("== after step ")
    # After §4.8, §4.9 and team-d's deletion: allocated/quota per team.
    assert "team-b                 4/2" in tables[1]
    assert "team-d                 8/8" in tables[2]
    assert "team-a                 8/4" in tables[4]
    assert "team-d                 0/8" in tables[4]


def test_it_exits_1_and_names_a_wrong_expectation(tr4858, tmp_path):
    tr4858["steps"][1]["expect"]["allocated"]["team-a"] = 3
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(tr4858))
    result = run(path)
    assert result.returncode == 1
    assert "FAIL step 1: allocated team-a = 4, want 3" in result.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not JSON"),
        ('{"nodes": [], "projects": []}', "'steps' must be a list"),
        (
            '{"nodes": [{"name": "n", "gpus": 8}], "projects": [{"name": "a", "quota": 1}],'
            ' "steps": [{"submit": [{"name": "j", "project": "zz", "gpus": 1}]}]}',
            "unknown project 'zz'",
        ),
        (
            '{"nodes": [{"name": "n", "gpus": "eight"}], "projects": [], "steps": []}',
            "nodes[0].gpus: expected a number",
        ),
        ('{"nodes": [], "projects": [], "steps": [], "policy": {"bogus": 1}}', "bogus"),
    ],
)
def test_it_exits_2_with_one_line_on_an_invalid_file(tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content)
    result = run(path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_it_exits_2_on_a_missing_file(tmp_path):
    result = run(tmp_path / "absent.json")
    assert result.returncode == 2
    assert "cannot read" in result.stderr


def test_a_wrong_expectation_fails_and_names_the_mismatch(tmp_path):
    scenario = {
        "name": "wrong_expectation",
        "source": "test of the replay itself",
        "nodes": [{"name": "n1", "gpus": 2}],
        "projects": [{"name": "team-a", "quota": 2}],
        "steps": [
            {"submit": [{"name": "a-1", "project": "team-a", "gpus": 1, "type": "train"}]},
            {"expect": {"allocated": {"team-a": 2}, "pending": ["team-a/a-1"]}},
        ],
    }
    path = tmp_path / "wrong.json"
    path.write_text(json.dumps(scenario))
    failures = replay_file(path).failures
    assert len(failures) == 2
    assert "allocated team-a = 1" in failures[0] and "want 2" in failures[0]
    assert "team-a/a-1" in failures[1] and "Pending" in failures[1]
    assert main([str(path)]) == 1
