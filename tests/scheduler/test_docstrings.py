"""Every public function and class of scheduler/ states its contract in a docstring (STYLE.md)."""

import ast

import pytest

from tests.docstrings import public_definitions


@pytest.mark.parametrize(
    ("where", "node"), list(public_definitions("scheduler")), ids=lambda v: str(v)[:60]
)
def test_every_public_definition_has_a_docstring(where, node):
    assert ast.get_docstring(node), f"{where} has no docstring"
