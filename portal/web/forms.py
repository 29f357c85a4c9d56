"""HTML forms validated by the REST API's own serializers, so a page and the API give the same
error messages, field by field.

A form posts text; `form_input` turns it into what the serializer expects (numbers, lists,
KEY=VALUE maps, checkboxes), and `field_errors` flattens the serializer's errors into one message
list per field name, for the template to print next to each field.
"""

from __future__ import annotations

import re
import shlex

from django.http import QueryDict
from rest_framework.exceptions import APIException

# how a form field's text becomes serializer input
TEXT, NUMBER, FLOAT, LIST, WORDS, ENV, CHECK, PORTS, VOLUMES, DURATION = (
    "text", "number", "float", "list", "words", "env", "check", "ports", "volumes", "duration"
)  # fmt: skip
DURATION_TEXT = re.compile(r"^(\d+)\s*([smhd]?)$", re.IGNORECASE)
SECONDS_PER = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def form_input(post: QueryDict, kinds: dict[str, str]) -> tuple[dict, dict[str, list[str]]]:
    """(serializer input, errors found while reading the text) for the fields in `kinds`.

    An empty optional field is left out (the serializer's default applies), except NUMBER fields
    which become None (meaning "none", e.g. no limit)."""
    data, errors = {}, {}
    for name, kind in kinds.items():
        raw = post.get(name, "")
        if kind == CHECK:
            data[name] = name in post
            continue
        raw = raw.strip()
        if kind == NUMBER:
            data[name] = raw or None
        elif not raw:
            continue
        elif kind == TEXT:
            data[name] = raw
        elif kind == FLOAT:  # a JSON number for the API's fields that refuse strings
            try:
                data[name] = float(raw)
            except ValueError:
                errors[name] = [f"must be a number, not {raw[:32]!r}"]
        elif kind == DURATION:  # 5400, 90m, 2h, 1d -> seconds (the serializer checks the range)
            match = DURATION_TEXT.match(raw)
            if match:
                data[name] = int(match[1]) * SECONDS_PER[match[2].lower()]
            else:
                errors[name] = [f"must be a duration such as 90m, 2h or 1d, not {raw[:32]!r}"]
        elif kind == LIST:
            data[name] = [
                item.strip() for item in raw.replace("\n", ",").split(",") if item.strip()
            ]
        elif kind == PORTS:
            data[name] = raw.replace(",", " ").split()
        elif kind == WORDS:
            try:
                data[name] = shlex.split(raw)
            except ValueError as exc:
                errors[name] = [f"cannot split into words: {exc}"]
        elif kind == ENV:
            data[name], bad = _pairs(raw, "=")
            if bad:
                errors[name] = [f"line {bad!r} is not KEY=VALUE"]
        elif kind == VOLUMES:
            pairs, bad = _pairs(raw, ":")
            data[name] = [{"pvc": claim, "mount_path": path} for claim, path in pairs.items()]
            if bad:
                errors[name] = [f"line {bad!r} is not CLAIM:/mount/path"]
    return data, errors


def _pairs(raw: str, separator: str) -> tuple[dict[str, str], str | None]:
    pairs, bad = {}, None
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        key, found, value = line.partition(separator)
        if not found or not key.strip():
            bad = bad or line
            continue
        pairs[key.strip()] = value.strip()
    return pairs, bad


def field_errors(detail) -> dict[str, list[str]]:
    """A serializer's (or APIException's) errors as {field: [message, ...]}; nested errors
    (a list of volumes) are joined under their field, request-wide ones under `form`."""
    if isinstance(detail, APIException):
        detail = detail.detail
    if not isinstance(detail, dict):
        return {"form": [str(message) for message in _flatten(detail)]}
    errors = {}
    for field, messages in detail.items():
        key = "form" if field in ("non_field_errors", "detail") else field
        errors.setdefault(key, []).extend(str(message) for message in _flatten(messages))
    return errors


def _flatten(value) -> list:
    if isinstance(value, dict):
        return [f"{key}: {message}" for key, inner in value.items() for message in _flatten(inner)]
    if isinstance(value, list):
        return [message for item in value for message in _flatten(item)]
    return [value]
