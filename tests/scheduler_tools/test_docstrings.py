"""Every public function and class of scheduler_tools/ states its contract in a docstring, as in
the core it was split from (STYLE.md)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "scheduler_tools"


def public_definitions():
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                yield f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name}", node


@pytest.mark.parametrize(("where", "node"), list(public_definitions()), ids=lambda v: str(v)[:60])
def test_every_public_definition_has_a_docstring(where, node):
    assert ast.get_docstring(node), f"{where} has no docstring"
