"""The API's JSON parser: a bounded body of text the database can store, or a 400 that says why.

A body larger than DATA_UPLOAD_MAX_MEMORY_SIZE (ALLOT_MAX_BODY_BYTES) or nested deeper than
MAX_DEPTH is refused before anything looks at it further: without the bounds a 1,000-deep body
ended in a RecursionError (a 500) and a large one was read whole (issue 22 item 5).

PostgreSQL text cannot hold NUL characters and UTF-8 cannot encode lone surrogates (JSON's
"\\ud800" escapes); either would otherwise surface as a 500 at the first INSERT. The parser
checks every string, keys included, and names the path of the first offending one.
"""

from __future__ import annotations

import io

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

MAX_DEPTH = 64  # a job is 3 levels deep, a bulk submission 5


def too_big_message(limit: int) -> str:
    """What a body over `limit` bytes is told (the parser's and the error handler's words)."""
    return f"is larger than {limit} bytes, the most a request may send"


def unstorable(text: str) -> str | None:
    """Why `text` cannot be stored as database text, or None when it can."""
    if "\x00" in text:
        return "contains a NUL character"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired UTF-16 surrogate"
    return None


def _check(data) -> None:
    """Refuse nesting deeper than MAX_DEPTH and strings the database cannot store, walking with a
    stack of its own (no recursion, whatever the depth)."""
    stack = [(data, "", 1)]
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            reason = unstorable(value)
            if reason:
                raise ParseError(f"{path or 'the body'} {reason}")
            continue
        if not isinstance(value, dict | list):
            continue
        if depth > MAX_DEPTH:
            raise ParseError(f"nests objects and arrays deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            for key in value:
                if isinstance(key, str) and unstorable(key):
                    raise ParseError(f"a key of {path or 'the body'} {unstorable(key)}")
            items = [(item, f"{path}.{key}" if path else str(key)) for key, item in value.items()]
        else:
            items = [(item, f"{path}[{index}]") for index, item in enumerate(value)]
        stack.extend((item, where, depth + 1) for item, where in reversed(items))  # in order


def _read_bounded(stream) -> bytes:
    """The body, or a ParseError when it holds more than the limit (read no further)."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    raw = stream.read(limit + 1) if limit is not None else stream.read()
    if limit is not None and len(raw) > limit:
        raise ParseError(too_big_message(limit))
    return raw


class StorableJSONParser(JSONParser):
    """DRF's JSONParser within bounds of size and depth, plus the check that every string can be
    stored."""

    def parse(self, stream, media_type=None, parser_context=None):
        """Parse the body, then refuse what is too big, too deep or unstorable (400 under
        `body`)."""
        raw = _read_bounded(stream)
        try:
            data = super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:  # deeper than the interpreter goes: far deeper than MAX_DEPTH
            raise ParseError(f"nests objects and arrays deeper than {MAX_DEPTH} levels") from None
        _check(data)
        return data
