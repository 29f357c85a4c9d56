"""The README a newcomer reads (issue 34 item 15): the two set-up commands first, then signing
in, before any internals (they live in docs/); nothing it or docs/ points to is outside the
repository, and every relative link resolves to a file here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_the_readme_starts_with_the_two_commands_then_signing_in():
    lines = README.read_text().splitlines()
    commands = [line for line in lines[:8] if line.startswith("make ")]
    assert [line.split()[1] for line in commands] == ["run", "test"]
    headings = [(number, line) for number, line in enumerate(lines) if line.startswith("## ")]
    assert headings[0][1] == "## Sign in" and headings[0][0] < 40, headings[:3]
    assert [line for _, line in headings[:5]] == [
        "## Sign in", "## Your first project", "## Your first notebook", "## Your first job",
        "## REST and CLI",
    ]  # fmt: skip
    assert len(lines) < 150, "internals belong in docs/"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_nothing_points_outside_the_repository(page):
    text = page.read_text()
    assert "../shared" not in text and "/work/shared" not in text


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves_to_a_file_of_the_repository(page):
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists() and ROOT in path.parents, f"{page.name}: {target}"


def test_make_replay_uses_the_repositorys_copy_of_tr4858():
    makefile = (ROOT / "Makefile").read_text()
    assert "scheduler_tools.replay tests/fixtures/tr4858.json" in makefile
    assert (ROOT / "tests" / "fixtures" / "tr4858.json").exists()


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a Markdown page's headings: lower case, punctuation dropped, spaces
    turned into hyphens (code blocks hold no headings)."""
    text = re.sub(r"^```.*?^```", "", page.read_text(), flags=re.M | re.S)
    titles = re.findall(r"^#+\s+(.*?)\s*$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-") for title in titles}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_to_a_section_finds_its_heading(page):
    """A section's link (`web-ui.md#single-sign-on`, `#gpu-hour-accounting`) broke when the
    README's sections moved to docs/: the file exists, the heading must too."""
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target) or "#" not in target:
            continue
        path, anchor = target.split("#", 1)
        linked = (page.parent / path).resolve() if path else page
        if linked.suffix == ".md":
            assert anchor in anchors(linked), f"{page.name}: {target}"


def test_the_rule_book_is_in_the_repository_and_cited_there():
    """R1-R15 are cited all over the code; a clone has the rule book as docs/rules.md."""
    rules = (ROOT / "docs" / "rules.md").read_text()
    assert "## 9. Reclaim (between projects)" in rules
    assert "(rules.md)" in (ROOT / "docs" / "scheduling.md").read_text()


SHARED = ROOT.parent / "shared"


@pytest.mark.skipif(not SHARED.exists(), reason="no ../shared beside this clone")
@pytest.mark.parametrize(
    "copy, original",
    [("tests/fixtures/tr4858.json", "scenarios/tr4858.json"), ("docs/rules.md", "SCHEDULING.md")],
)
def test_the_repositorys_copies_hold_the_shared_files(copy, original):
    """make replay and the docs use the repository's copies: they must not drift from the
    project's shared files when those are at hand (docs/rules.md adds only a heading note)."""
    shared = (SHARED / original).read_text()
    assert shared in (ROOT / copy).read_text()
