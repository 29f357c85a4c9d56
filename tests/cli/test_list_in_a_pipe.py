"""Issue 24 item 8: `allot list | cat` prints every value in full, in aligned columns, one line
per job, so `allot list | grep Running` finds the running jobs; `--json` stays."""

from __future__ import annotations

import json

import pytest
from rich.table import Table

from cli.tables import plain
from tests.cli.test_allot_command import allot, settle  # noqa: F401 (the fixture)

pytestmark = pytest.mark.django_db(transaction=True)
IMAGE = (
    "registry.example.org/research/vision-team/very-long-image-name-for-training:2026.11.25-cuda12"
)


def test_a_piped_list_prints_full_values_in_aligned_columns(allot):  # noqa: F811
    assert allot("project", "set", "team-a").returncode == 0
    for name in ("train-with-a-long-name-1", "short"):
        done = allot("submit", name, "-i", IMAGE, "-g", "1")
        assert done.returncode == 0, done.stderr
    settle()
    settle()
    listed = allot("list")  # captured: stdout is a pipe, not a terminal
    assert listed.returncode == 0, listed.stderr
    assert "…" not in listed.stdout
    header, *rows = listed.stdout.split("\n\n")[0].splitlines()
    assert header.split() == ["NAME", "STATUS", "AGE", "NODE", "IMAGE", "PROJECT", "USER",
                              "GPUs", "SERVICE", "URL(S)"]  # fmt: skip
    running = [row for row in rows if "Running" in row]
    assert len(running) == 2 and all(IMAGE in row for row in running), listed.stdout
    assert {row.index(IMAGE) for row in rows} == {header.index("IMAGE")}  # aligned
    assert "train-with-a-long-name-1" in listed.stdout
    assert {job["image"] for job in json.loads(allot("list", "--json").stdout)} == {IMAGE}


def test_plain_pads_every_column_but_the_last_and_cuts_nothing():
    table = Table("NAME", "STATUS", "URL")
    table.add_row("a-rather-long-job-name", "Running", "-")
    table.add_row("b", "Pending", "http://example.org/" + "x" * 120)
    assert plain(table).splitlines() == [
        "NAME                     STATUS    URL",
        "a-rather-long-job-name   Running   -",
        "b                        Pending   http://example.org/" + "x" * 120,
    ]


def test_the_summary_line_goes_to_stderr_so_a_pipe_gets_the_table_alone(allot):  # noqa: F811
    """Issue 34 item 13: `allot list | cat` kept the summary line."""
    assert allot("project", "set", "team-a").returncode == 0
    assert allot("submit", "one", "-i", IMAGE, "-g", "1").returncode == 0
    listed = allot("list")
    assert listed.stdout.splitlines()[0].split()[0] == "NAME"
    assert "job(s)" not in listed.stdout and "1 job(s)" in listed.stderr


def test_on_an_80_column_terminal_headers_stay_whole_and_values_wrap_uncut():
    """Issue 34 item 13: on 80 columns the header wrapped and images were cut to 'pytorch/py…'."""
    import io

    from rich.console import Console

    from cli.tables import show

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    table = Table("NAME", "STATUS", "AGE", "NODE", "IMAGE", "PROJECT", "USER", "GPUs",
                  "SERVICE URL(S)", box=None, pad_edge=False)  # fmt: skip
    table.add_row("train-with-a-long-name-1", "Running", "3m", "dgx1-1", IMAGE, "team-a", "bob",
                  "1/1", "-")  # fmt: skip
    screen = Terminal()
    show(table, Console(file=screen, width=80, force_terminal=True, color_system=None), screen)
    lines = screen.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines)
    assert lines[0].split() == ["NAME", "STATUS", "AGE", "NODE", "IMAGE", "PROJECT", "USER",
                                "GPUs", "SERVICE", "URL(S)"]  # fmt: skip
    assert "…" not in screen.getvalue()
    assert "".join(
        line.split("dgx1-1")[-1].split()[0] if "dgx1-1" in line else "" for line in lines
    )


def test_list_and_describe_mark_a_workload_another_tool_made(allot):  # noqa: F811
    """Issue 33: an external workload's USER says what made it; describe says who deletes it."""
    from portal.jobs.models import Job
    from portal.tenancy.models import Project

    Job.objects.create(project=Project.objects.get(name="team-a"), name="four", gpus=1, pods=4,
                       external_uid="uid-four", external_kind="Job", external_owner="four",
                       external_namespace="allot-team-a")  # fmt: skip
    assert allot("project", "set", "team-a").returncode == 0
    listed = allot("list")
    row = next(line for line in listed.stdout.splitlines() if line.startswith("four "))
    assert "external Job" in row
    described = allot("describe", "four").stdout
    assert "Job four in namespace allot-team-a; its owner deletes it (kubectl delete job four" in (
        described
    )
