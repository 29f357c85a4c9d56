"""Every public function and class of scheduler_tools/ states its contract in a docstring, as in
the core it was split from (STYLE.md)."""

import ast

import pytest

from tests.docstrings import public_definitions


@pytest.mark.parametrize(
    ("where", "node"), list(public_definitions("scheduler_tools")), ids=lambda v: str(v)[:60]
)
def test_every_public_definition_has_a_docstring(where, node):
    assert ast.get_docstring(node), f"{where} has no docstring"
