"""The API's JSON parser: text the database can store, or a 400 that says where it is not.

PostgreSQL text cannot hold NUL characters and UTF-8 cannot encode lone surrogates (JSON's
"\\ud800" escapes); either would otherwise surface as a 500 at the first INSERT. The parser
checks every string, keys included, and names the path of the first offending one.
"""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored as database text, or None when it can."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate"
    return None


def _check(value, path: str) -> None:
    if isinstance(value, str):
        reason = unstorable(value)
        if reason:
            raise ParseError(f"{path or 'the body'} {reason}")
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and unstorable(key):
                raise ParseError(f"a key of {path or 'the body'} {unstorable(key)}")
            _check(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check(item, f"{path}[{index}]")


class StorableJSONParser(JSONParser):
    """DRF's JSONParser plus the check that every string can be stored."""

    def parse(self, stream, media_type=None, parser_context=None):
        """Parse the body, then refuse strings the database cannot hold (400 under `body`)."""
        data = super().parse(stream, media_type, parser_context)
        _check(data, "")
        return data
