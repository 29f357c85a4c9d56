"""The dependency rule of DESIGN.md, checked two ways: the import-linter contracts hold on the
tree and break on a planted violation (so they can fail), and no import cycle exists between
files or between the portal's apps (computed from the import graph, imports inside functions
included)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

from tests.paths import ROOT

PACKAGES = ("scheduler", "scheduler_tools", "agents", "portal", "cli")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(where: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(where)}  # the copy, ahead of the editable install
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=where, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    """A copy of the packages and pyproject.toml to plant violations in."""
    where = tmp_path_factory.mktemp("tree")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, where / package,
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


def plant(where: Path, module: str, line: str) -> None:
    path = where / module
    path.write_text(path.read_text() + f"\n{line}  # noqa\n")


def test_every_contract_holds_on_the_tree():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("scheduler/bands.py", "from portal.jobs import models",
         "The scheduling core imports only the standard library BROKEN"),
        ("scheduler/bands.py", "import agents.base",
         "The scheduling core imports only the standard library BROKEN"),
        ("scheduler/bands.py", "from scheduler_tools import simulate",
         "The scheduling core imports only the standard library BROKEN"),
        ("portal/jobs/models.py", "from portal.scheduling import cycle",
         "The portal's apps in layers: each imports only the layers below it BROKEN"),
        ("portal/tenancy/models.py", "from portal.access import projects_for",
         "The portal's apps in layers: each imports only the layers below it BROKEN"),
        ("portal/api/urls.py", "from portal.web import views",
         "The portal's apps in layers: each imports only the layers below it BROKEN"),
    ],
)  # fmt: skip
def test_a_planted_import_against_the_rule_breaks_its_contract(copy, module, line, contract):
    original = (copy / module).read_text()
    plant(copy, module, line)
    try:
        result = lint_imports(copy)
    finally:
        (copy / module).write_text(original)
    assert result.returncode != 0
    assert contract in result.stdout


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(*PACKAGES, cache_dir=None)


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one member (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in sorted(edges.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_cycles_finds_a_loop_and_only_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_file_imports_itself_back_through_others(graph):
    edges = {
        module: {
            other for other in graph.find_modules_directly_imported_by(module)
            if other.split(".")[0] in PACKAGES
        }
        for module in graph.modules
        if module.split(".")[0] in PACKAGES
    }  # fmt: skip
    assert cycles(edges) == []


def test_no_app_of_the_portal_imports_itself_back_through_others(graph):
    def app(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if parts[0] == "portal" and len(parts) > 2 else None

    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        if (source := app(module)) is None:
            continue
        for other in graph.find_modules_directly_imported_by(module):
            target = app(other)
            if target is not None and target != source:
                edges.setdefault(source, set()).add(target)
    assert set(edges) >= {"api", "web", "scheduling", "jobs"}  # the graph was really read
    assert cycles(edges) == []
