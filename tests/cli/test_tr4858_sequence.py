"""TR-4858 §4.8 typed as the report gives it, with `runai` replaced by `allot`: the four teams fill
the two DGX-1 (16 GPUs); team-b and team-c run over quota on team-d's idle GPUs."""

from __future__ import annotations

import json
import re
import shlex

import pytest

from tests.cli.test_allot_command import allot, settle  # noqa: F401 (the fixture)
from tests.paths import tr4858

pytestmark = pytest.mark.django_db(transaction=True)

# "Actual command sequence used in testing", TR-4858 "Testing Details for Section 4.8"
# (NetAppDocs/netapp-solutions ai/osrunai_testing_details_for_section_48.adoc), verbatim.
REPORT_4_8 = r"""
$ runai submit a-1-1-jupyter -i jupyter/base-notebook -g 1 \
  --interactive --service-type=ingress --port 8888 \
  --args="--NotebookApp.base_url=team-a-test-ingress" --command=start-notebook.sh -p team-a
$ runai submit a-1-g -i gcr.io/run-ai-demo/quickstart -g 1 -p team-a
$ runai submit a-2-gg -i gcr.io/run-ai-demo/quickstart -g 2 -p team-a
$ runai submit b-1-g06 -i gcr.io/run-ai-demo/quickstart -g 0.6 --interactive -p team-b
$ runai submit b-2-g04 -i gcr.io/run-ai-demo/quickstart -g 0.4 --interactive -p team-b
$ runai submit b-3-g -i gcr.io/run-ai-demo/quickstart -g 1 -p team-b
$ runai submit b-4-gg -i gcr.io/run-ai-demo/quickstart -g 2 -p team-b
$ runai submit c-1-g05 -i gcr.io/run-ai-demo/quickstart -g 0.5 --interactive -p team-c
$ runai submit c-2-g03 -i gcr.io/run-ai-demo/quickstart -g 0.3 --interactive -p team-c
$ runai submit c-3-g02 -i gcr.io/run-ai-demo/quickstart -g 0.2 --interactive -p team-c
$ runai submit c-4-gg -i gcr.io/run-ai-demo/quickstart -g 2 -p team-c
$ runai submit c-5-g -i gcr.io/run-ai-demo/quickstart -g 1 -p team-c
$ runai submit d-1-gggg -i gcr.io/run-ai-demo/quickstart -g 4 -p team-d
"""


def report_commands() -> list[list[str]]:
    """The report's command lines as words, shell continuation lines joined."""
    lines = REPORT_4_8.replace("\\\n", " ").strip().splitlines()
    return [shlex.split(line.removeprefix("$ ")) for line in lines]


def test_the_report_lines_are_the_scenarios_first_step():
    """The typed lines submit exactly the jobs of tr4858.json's first step, in its order."""
    scenario = json.loads(tr4858().read_text())["steps"][0]["submit"]
    typed = []
    for words in report_commands():
        flags = dict(zip(words[3:], [*words[4:], ""], strict=True))
        typed.append((words[2], flags["-p"], float(flags["-g"]), flags["-i"],
                      "interactive" if "--interactive" in words else "train"))  # fmt: skip
    expected = [(j["name"], j["project"], float(j["gpus"]), j["image"], j["type"])
                for j in scenario]  # fmt: skip
    assert typed == expected


def test_tr4858_section_4_8_command_sequence_fills_16_gpus(allot):  # noqa: F811
    for words in report_commands():
        assert words[:2] == ["runai", "submit"]
        done = allot(*words[1:])  # the program name is the only change
        assert done.returncode == 0, f"{shlex.join(words)}\n{done.stderr}"
        settle()  # the portal runs a cycle after each committed submission (as the report's did)

    listed = allot("list", "-A")
    assert listed.returncode == 0, listed.stderr
    assert "13 job(s), 16 GPU(s) in use" in listed.stderr, listed.stderr
    statuses = {line.split()[0]: line.split()[1] for line in listed.stdout.splitlines()[1:]}
    assert len(statuses) == 13 and set(statuses.values()) == {"Running"}, listed.stdout

    notebook = json.loads(allot("get", "a-1-1-jupyter", "-p", "team-a", "--json").stdout)
    assert notebook["command"] == ["start-notebook.sh"]
    assert notebook["args"] == ["--NotebookApp.base_url=team-a-test-ingress"]
    assert (notebook["type"], notebook["service_type"], notebook["ports"]) == (
        "interactive", "ingress", [8888],
    )  # fmt: skip

    top = allot("top")
    assert top.returncode == 0, top.stderr
    assert "GPUs 16/16 allocated, 0 free" in top.stdout, top.stdout
    # The report's table: team-a 4/4, team-b 4/2, team-c 4/2, team-d 4/8, nothing queued.
    over = "4 (+2 over quota)"
    for team, quota, allocated in (("team-a", "4", "4"), ("team-b", "2", over),
                                   ("team-c", "2", over), ("team-d", "8", "4")):  # fmt: skip
        row = next(line for line in top.stdout.splitlines() if line.split()[:1] == [team])
        pattern = rf"{team}\s+{quota}\s+[\d.]+\s+{re.escape(allocated)}\s+\d+\s+0\s"
        assert re.search(pattern, row), row
