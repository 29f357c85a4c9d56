"""The public functions and classes of a package, for the tests that hold each to a docstring
stating its contract (STYLE.md)."""

import ast
from collections.abc import Iterator

from tests.paths import ROOT


def public_definitions(package: str) -> Iterator[tuple[str, ast.AST]]:
    """("path:line name", node) of every public function and class under ROOT/`package`."""
    top = ROOT / package
    for path in sorted(top.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.name.startswith("_"):
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name}", node
