"""Fields and query readers that take exactly what the OpenAPI schema says, no more.

DRF reads leniently: a BooleanField takes "true", "yes", 1 and "on"; a page size that is not a
number silently becomes the default. The schema says `boolean` and `integer`, so a client
reading it (and Schemathesis, which checks that what the schema rules out is refused) is told
one thing and the server does another. The rule for the whole API (issue 22 item 9): request
bodies are JSON only (`StorableJSONParser` is the one parser), so a boolean is a JSON `true` or
`false`; a number in the query string is written with the digits 0-9 and lies within the
bounds the schema documents. Anything else is a 400 naming the field.

The web forms reuse the serializers with Python values they read themselves
(`portal.web.forms`: a checkbox is `name in request.POST`), so they pass `True`/`False` too.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal

from django.db import models
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import empty

# ASCII digits only: int() also reads "+1", " 1" and other scripts' digits
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean: `true` or `false`, never "true", 1 or "yes"."""

    default_error_messages = {"invalid": "must be true or false (a JSON boolean), not {input}."}

    def to_internal_value(self, data) -> bool:
        if data is True or data is False:
            return data
        self.fail("invalid", input=_shown(data))


def _shown(data) -> str:
    """The refused value as JSON would spell it, cut short."""
    if data is None:
        return "null"
    return repr(data)[:40] if isinstance(data, str) else type(data).__name__


# The JSON types each kind of field takes (DRF also reads 5 as the string "5", "1.5" as a
# number and "true" as a boolean). Decimal: the web's forms pass numbers typed as text that way.
NUMBERS = (int, float, Decimal)
JSON_TYPES = [
    (serializers.BooleanField, (bool,), "true or false"),
    (serializers.IntegerField, (int, Decimal), "a whole number"),  # DRF refuses 1.5 itself
    (serializers.FloatField | serializers.DecimalField, NUMBERS, "a number"),
    (serializers.CharField, (str,), "a string"),
    (serializers.ListField | serializers.MultipleChoiceField, (list,), "a list"),
    (serializers.DictField | serializers.HStoreField, (dict,), "an object"),
]


def wrong_type(field, value) -> str | None:
    """Why `value` is not of the JSON type `field` takes, or None when it is (or when the field
    is of a kind of its own, e.g. a quantity that takes "500m" or 0.5)."""
    if value is None:
        return None  # the field's allow_null decides
    if isinstance(field, serializers.ChoiceField) and not isinstance(
        field, serializers.MultipleChoiceField
    ):
        kinds = {type(key) for key in field.choices}
        expected = (str,) if kinds == {str} else None
        words = "a string"
    else:
        expected, words = next(
            ((types, words) for kind, types, words in JSON_TYPES if isinstance(field, kind)),
            (None, ""),
        )
    if expected is None:
        return None
    if isinstance(value, bool) and bool not in expected:  # JSON's true is no number
        return f"must be {words}, not {_json_type(value)}"
    if not isinstance(value, expected):
        return f"must be {words}, not {_json_type(value)}"
    if isinstance(field, serializers.ListField):  # and each item, of the items' type
        reasons = (wrong_type(field.child, item) for item in value)
        reason = next((f"item {i}: {why}" for i, why in enumerate(reasons) if why), None)
        return reason
    if isinstance(field, serializers.DictField):  # and each value, of the values' type
        reasons = ((key, wrong_type(field.child, item)) for key, item in value.items())
        return next((f"{key!r}: {why}" for key, why in reasons if why), None)
    return None


def _json_type(value) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
             list: "a list", dict: "an object"}  # fmt: skip
    return next((name for kind, name in names.items() if isinstance(value, kind)), "that")


class StrictTypesMixin:
    """A serializer that takes each field's JSON type only: a string for a text field, a number
    for a number field, true or false for a boolean, a list, an object. The type errors of all
    fields at once are a 400 naming them, before any other check."""

    def to_internal_value(self, data):
        if isinstance(data, Mapping):
            errors = {}
            for field in self._writable_fields:
                if field.field_name in data:
                    reason = wrong_type(field, data[field.field_name])
                    if reason:
                        errors[field.field_name] = [reason]
            if errors:
                raise ValidationError(errors)
        return super().to_internal_value(data)


class StrictSerializer(StrictTypesMixin, serializers.Serializer):
    """A Serializer of the API: JSON types as its fields say (StrictTypesMixin)."""


class StrictModelSerializer(StrictTypesMixin, serializers.ModelSerializer):
    """A ModelSerializer of the API: JSON types as its fields say (StrictTypesMixin), and model
    booleans as StrictBooleanFields (tests/portal/api/test_strict_input.py checks that every API
    serializer with writable fields is strict)."""

    serializer_field_mapping = {
        **serializers.ModelSerializer.serializer_field_mapping,
        models.BooleanField: StrictBooleanField,
    }


class StrictSlugRelatedField(serializers.SlugRelatedField):
    """An object named by a JSON string (DRF's SlugRelatedField also finds project "0" by 0)."""

    default_error_messages = {"invalid": "must be a string, the name of one."}

    def run_validation(self, data=empty):
        """An empty name is refused (DRF's related fields read "" as null, which a schema
        saying 'a name of at least one character, or null' does not allow)."""
        if data == "":
            raise ValidationError(
                "may not be empty: a name" + (", or null for none" if self.allow_null else "")
            )
        return super().run_validation(data)

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


def whole_number(params, name: str, low: int, high: int, default: int | None = None) -> int | None:
    """Query parameter `name` as an integer in [low, high], `default` when absent; a 400 naming it
    ("name: must be a whole number from low to high") when it is anything else, empty included."""
    if name not in params:
        return default
    raw = params[name]
    if WHOLE_NUMBER.fullmatch(raw) and low <= int(raw) <= high:
        return int(raw)
    raise ValidationError({name: [f"must be a whole number from {low} to {high}"]})


def refuse_empty(params, names: tuple[str, ...], what: str) -> None:
    """A 400 naming each of `names` given with no value (`?until=`): the schema says what each
    takes (a date, an address), and nothing is not one. The web's forms send empty fields, and
    read them as absent; the API's clients leave out what they do not mean."""
    empty = [name for name in names if name in params and not params[name].strip()]
    if empty:
        raise ValidationError({name: [f"must be {what}, not empty"] for name in empty})


def whole_number_parameter(name: str, low: int, high: int | None, description: str) -> dict:
    """The OpenAPI description of a query parameter `whole_number` reads."""
    schema = {"type": "integer", "minimum": low}
    if high is not None:
        schema["maximum"] = high
    return {"name": name, "required": False, "in": "query", "description": description,
            "schema": schema}  # fmt: skip


# Query parameters that name a moment: what the OpenAPI schema says they take. A date is that
# day (its midnight, the next one's for an `until`); a date and time in RFC 3339 (the parsers
# also read the shorter ISO 8601 forms, 2026-11-25T12:04, as the portal's local time).
DATE_OR_TIME = {"anyOf": [{"type": "string", "format": "date"},
                          {"type": "string", "format": "date-time"}]}  # fmt: skip
DATE_TIME = {"type": "string", "format": "date-time"}
IP_ADDRESS = {"anyOf": [{"type": "string", "format": "ipv4"}, {"type": "string", "format": "ipv6"}]}
