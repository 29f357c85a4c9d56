"""The core imports the standard library and itself, nothing else (DESIGN.md, issue 27).

import-linter's contract forbids the packages it names; this reads every import of every module
under scheduler/, so a package nobody thought to name is caught as well."""

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scheduler"


def imported_roots():
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module]
            else:
                continue  # relative imports stay inside the core
            for name in names:
                yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno}", name.split(".")[0]


@pytest.mark.parametrize(("where", "root"), sorted(set(imported_roots())))
def test_every_import_of_the_core_is_the_standard_library_or_the_core(where, root):
    assert root in sys.stdlib_module_names or root in ("__future__", "scheduler"), (
        f"{where} imports {root}"
    )
