"""HTML forms validated by the REST API's own serializers, so a page and the API give the same
error messages, field by field.

A form posts text; `form_input` turns it into what the serializer expects (numbers, lists,
KEY=VALUE maps, checkboxes), each field by the reader of its kind (`READERS`), and
`field_errors` flattens the serializer's errors into one message list per field name, for the
template to print next to each field.
"""

from __future__ import annotations

import re
import shlex
from decimal import Decimal

from django.http import QueryDict
from rest_framework.exceptions import APIException

# how a form field's text becomes serializer input
TEXT, NUMBER, INTEGER, FLOAT, LIST, WORDS, ENV, CHECK, PORTS, VOLUMES, DURATION, SECONDS = (
    "text", "number", "integer", "float", "list", "words", "env", "check", "ports", "volumes",
    "duration", "seconds",
)  # fmt: skip
QUANTITY = "quantity"  # a Kubernetes quantity ("2", "16Gi") the serializer reads; empty: none
CHOICE = "choice"  # a name picked from a list (a project's department); empty: none
WEIGHTS = "weights"  # USER=NUMBER lines (a project's user weights, R21.4); empty: none
# Numbers are written with the digits 0-9 only: Python's int(), float() and Decimal() (and so
# DRF's fields) also read other scripts' digits, such as the full-width 1, U+FF11 (issue 22,
# item 8).
NUMBER_TEXT = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$", re.ASCII)
INTEGER_TEXT = re.compile(r"^[+-]?\d+$", re.ASCII)
DURATION_TEXT = re.compile(r"^(\d+)\s*([smhd]?)$", re.IGNORECASE | re.ASCII)
SECONDS_PER = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


ABSENT = object()  # a field left out of the serializer input: the serializer's default applies


def form_input(post: QueryDict, kinds: dict[str, str]) -> tuple[dict, dict[str, list[str]]]:
    """(serializer input, errors found while reading the text) for the fields in `kinds`.

    An empty optional field is left out (the serializer's default applies), except NUMBER fields
    which become None (meaning "none", e.g. no limit). A field that cannot be read is named in
    the errors; what could be read of it (the good lines of a map) is kept."""
    data, errors = {}, {}
    for name, kind in kinds.items():
        value, error = read_field(post, name, kind)
        if value is not ABSENT:
            data[name] = value
        if error is not None:
            errors[name] = [error]
    return data, errors


def read_field(post: QueryDict, name: str, kind: str) -> tuple[object, str | None]:
    """(the serializer input of one field or ABSENT, why its text cannot be read or None)."""
    if kind == CHECK:
        return name in post, None
    raw = post.get(name, "").strip()
    if kind == NUMBER:
        return _number(raw) if raw else (None, None)
    if kind == SECONDS:  # a project's time limit: empty means none, -1 or never means never
        return _seconds(raw) if raw else (None, None)
    if kind in (QUANTITY, CHOICE):
        return (raw or None), None
    if kind == WEIGHTS:  # an emptied box clears the weights, it does not keep the old ones
        return _weights(raw) if raw else ({}, None)
    if not raw:
        return ABSENT, None
    return READERS[kind](raw)


def _not_a_number(raw: str) -> str:
    return f"must be a number written with the digits 0-9, not {raw[:32]!r}"


def _text(raw: str) -> tuple[object, str | None]:
    return raw, None


def _number(raw: str) -> tuple[object, str | None]:
    """A number, exactly as typed (a Decimal), for the serializer's decimal and integer fields
    to read: the API's serializers take numbers, not text (portal.api.fields)."""
    return (Decimal(raw), None) if NUMBER_TEXT.match(raw) else (ABSENT, _not_a_number(raw))


def _integer(raw: str) -> tuple[object, str | None]:
    """A whole number."""
    if not INTEGER_TEXT.match(raw):
        return ABSENT, f"must be a whole number written with the digits 0-9, not {raw[:32]!r}"
    return int(raw), None


def _float(raw: str) -> tuple[object, str | None]:
    """A JSON number, for the API's fields that refuse strings."""
    if not NUMBER_TEXT.match(raw):
        return ABSENT, _not_a_number(raw)
    return float(raw), None


def _duration(raw: str) -> tuple[object, str | None]:
    """5400, 90m, 2h, 1d -> seconds (the serializer checks the range)."""
    match = DURATION_TEXT.match(raw)
    if match is None:
        return ABSENT, f"must be a duration such as 90m, 2h or 1d, not {raw[:32]!r}"
    return int(match[1]) * SECONDS_PER[match[2].lower()], None


def _seconds(raw: str) -> tuple[object, str | None]:
    """90m, 2h, 1d or plain seconds as the CLI takes them; -1 or "never" stay -1 (the serializer
    says where "never" is allowed)."""
    if raw.lower() in ("-1", "never"):
        return -1, None
    return _duration(raw)


def as_duration(seconds) -> str:
    """Seconds as the shortest duration a form reads back: 5400 -> 90m, 7200 -> 2h, -1 -> never."""
    if seconds is None:
        return ""
    seconds = int(seconds)
    if seconds == -1:
        return "never"
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return str(seconds)


def _list(raw: str) -> tuple[object, str | None]:
    """Items separated by commas or lines."""
    return [item.strip() for item in raw.replace("\n", ",").split(",") if item.strip()], None


def _ports(raw: str) -> tuple[object, str | None]:
    ports = raw.replace(",", " ").split()
    bad = [port for port in ports if not INTEGER_TEXT.match(port)]
    if bad:
        return ABSENT, f"port {bad[0][:32]!r} is not a number 1-65535"
    return [int(port) for port in ports], None  # numbers, as the API's serializer takes them


def _words(raw: str) -> tuple[object, str | None]:
    """A command line split as a shell would."""
    try:
        return shlex.split(raw), None
    except ValueError as exc:
        return ABSENT, f"cannot split into words: {exc}"


def _env(raw: str) -> tuple[object, str | None]:
    """KEY=VALUE lines -> a map."""
    pairs, bad = _pairs(raw, "=")
    return pairs, None if bad is None else f"line {bad!r} is not KEY=VALUE"


def _weights(raw: str) -> tuple[object, str | None]:
    """USER=NUMBER lines -> {user: Decimal} (numbers as the serializer takes a form's)."""
    pairs, bad = _pairs(raw, "=")
    if bad is not None:
        return ABSENT, f"line {bad!r} is not USER=WEIGHT"
    weights = {}
    for user, text in pairs.items():
        if not NUMBER_TEXT.match(text):
            return ABSENT, f"{user}: {_not_a_number(text)}"
        weights[user] = Decimal(text)
    return weights, None


def _volumes(raw: str) -> tuple[object, str | None]:
    """CLAIM:/mount/path lines -> [{"pvc": ..., "mount_path": ...}]."""
    pairs, bad = _pairs(raw, ":")
    volumes = [{"pvc": claim, "mount_path": path} for claim, path in pairs.items()]
    return volumes, None if bad is None else f"line {bad!r} is not CLAIM:/mount/path"


READERS = {TEXT: _text, INTEGER: _integer, FLOAT: _float, DURATION: _duration, LIST: _list,
           PORTS: _ports, WORDS: _words, ENV: _env, VOLUMES: _volumes}  # fmt: skip


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


def in_labels(errors: dict[str, list[str]], labels: dict[str, str]) -> dict[str, list[str]]:
    """`errors` with the API's field names in their messages written as the form's labels
    ("give gpus or gpu_memory" -> "give GPUs per pod or GPU memory per pod"): a page names its
    own fields. Only whole lower-case names are replaced, so "CPU-only" and prose stay."""
    if not labels:
        return errors
    names = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(labels, key=len,
                       reverse=True))) + r")(?![\w-])")  # fmt: skip
    return {field: [names.sub(lambda m: labels[m[1]], str(message)) for message in messages]
            for field, messages in errors.items()}  # fmt: skip


def _flatten(value) -> list:
    if isinstance(value, dict):
        return [f"{key}: {message}" for key, inner in value.items() for message in _flatten(inner)]
    if isinstance(value, list):
        return [message for item in value for message in _flatten(item)]
    return [value]
