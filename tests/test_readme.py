"""The README is what a newcomer reads first, in a lone clone (issue 34 item 15): it starts with
the set-up commands and then signing in, not the scheduler's internals, and neither it nor any
page under docs/ points at a file the clone does not have (such as ../shared/...)."""

import re
from pathlib import Path

import pytest

from tests.paths import ROOT, SCENARIOS, SHARED

README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
# [text](target) with an optional "title"; images too. Angle-bracket autolinks are absolute.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def links(path: Path) -> list[str]:
    """The link targets of a Markdown file, outside fenced code blocks."""
    return LINK.findall(FENCE.sub("", path.read_text()))


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for a Markdown file's headings: lower case, punctuation dropped, spaces
    turned into hyphens."""
    text = FENCE.sub("", path.read_text())
    titles = re.findall(r"^#+\s+(.*?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") for title in titles}


def test_readme_names_no_file_outside_the_repository():
    assert "../shared" not in README.read_text()
    assert "/work/" not in README.read_text()


@pytest.mark.parametrize("page", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_docs_name_no_file_outside_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text and "/work/shared" not in text


def test_the_first_section_is_signing_in_within_the_first_40_lines():
    lines = README.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert first < 40, f"the first section starts on line {first + 1}"
    assert "sign in" in lines[first].lower(), lines[first]


def test_the_readme_walks_a_newcomer_through_in_order():
    sections = [
        line[3:].lower() for line in README.read_text().splitlines() if line.startswith("## ")
    ]
    wanted = ["sign in", "first project", "first notebook", "first job", "rest and cli"]
    found = [next(i for i, s in enumerate(sections) if w in s) for w in wanted]
    assert found == sorted(found), sections


def test_the_readme_opens_with_the_two_set_up_commands():
    lines = README.read_text().splitlines()
    assert lines[2] == "```sh"
    assert lines[3].startswith("make run ") and lines[5].startswith("make test ")


@pytest.mark.parametrize("page", [README, *DOCS], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_in_the_repository(page):
    broken = []
    for target in links(page):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        missing = not file.is_relative_to(ROOT) or not file.exists()
        if missing or (anchor and file.suffix == ".md" and anchor not in anchors(file)):
            broken.append(target)
    assert not broken, f"{page.name}: {broken}"


def test_make_replay_uses_the_repositorys_scenario():
    makefile = (ROOT / "Makefile").read_text()
    assert "../shared" not in makefile
    assert "scheduler_tools.replay scenarios/tr4858.json" in makefile


@pytest.mark.skipif(not SHARED.exists(), reason="no ../shared beside this clone")
def test_the_scenario_is_the_shared_one_byte_for_byte():
    shared = SHARED / "scenarios" / "tr4858.json"
    assert (SCENARIOS / "tr4858.json").read_bytes() == shared.read_bytes()
