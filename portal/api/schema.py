"""The OpenAPI schema's error answers: what each operation can really answer besides success.

drf-spectacular documents the success only; this hook (SPECTACULAR_SETTINGS
`POSTPROCESSING_HOOKS`) adds the errors every API view shares, in the portal's error shape
(`portal.api.errors`): `{"field": ["reason"]}` for a bad request, `{"detail": "reason"}` for the
request as a whole. Schemathesis checks every answer against it
(tests/portal/api/test_schema_conformance.py).
"""

from __future__ import annotations

from drf_spectacular.plumbing import force_instance
from rest_framework import serializers

from portal.core.validators import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    MOUNT_PATH,
    validate_dns_label,
    validate_dns_subdomain,
    validate_mount_path,
)

STORABLE_TEXT = (
    "\n\nEvery request body is JSON (`application/json`), at most 64 levels deep; no string in "
    "it, nor any key, may hold a NUL character (U+0000) or an unpaired surrogate, which "
    "PostgreSQL text cannot store: such a body is a 400 under `body` naming where. A boolean is "
    "a JSON `true` or `false`, a number a JSON number; query parameters that are numbers are "
    "written with the digits 0-9."
)

DETAIL = {
    "type": "object",
    "properties": {"detail": {"type": "string"}},
    "required": ["detail"],
    "description": 'The request as a whole: `{"detail": "reason"}`.',
}
FIELD_ERRORS = {
    "anyOf": [
        {
            "type": "object",
            "additionalProperties": {},
            "description": 'Reasons by field: `{"field": ["reason", ...]}` (nested for nested '
            'fields), `{"body": [...]}` for a malformed, too deep or too large body, or '
            '`{"detail": "reason"}`.',
        },
        {"type": "array", "items": {"type": "string"}},
    ],
}
WRITES = {"post", "put", "patch", "delete"}


def _answer(description: str, component: str, *also: str) -> dict:
    """An error answer in JSON, or in one of the media types `also` (the body, e.g. CSV's, then
    has the reasons as text)."""
    json = {"schema": {"$ref": f"#/components/schemas/{component}"}}
    content = {
        "application/json": json,
        **{media: {"schema": {"type": "string"}} for media in also},
    }
    return {"description": description, "content": content}


def _errors(method: str, operation: dict, throttled: bool) -> dict:
    """The error answers of one operation, by status code."""
    parameters = operation.get("parameters", [])
    query = {p["name"] for p in parameters if p["in"] == "query"}
    success = next(iter(operation["responses"].values()), {}).get("content", {})
    formats = [media for media in success if media != "application/json"]  # e.g. text/csv
    errors = {}
    if "requestBody" in operation or query:
        errors["400"] = _answer("Invalid input, by field.", "FieldErrors", *formats)
    errors["401"] = _answer("No credentials, or bad ones.", "Detail", *formats)
    errors["403"] = _answer("Not allowed to this user (or a cross-site write).", "Detail", *formats)
    in_path = [p for p in parameters if p["in"] == "path"]
    if in_path or "requestBody" in operation or query & {"page", "format"}:
        # a path no route matches (an id that is not a number) is Django's own HTML page
        html = ["text/html"] if any(p["schema"].get("type") == "integer" for p in in_path) else []
        errors["404"] = _answer(
            "No such object visible to this user (in the path or named in the body), no such "
            "page or no such format.",
            "FieldErrors",
            *html,
            *formats,  # e.g. ?format=csv&project= naming a project not there: the CSV's 404
        )
    if method in WRITES:
        errors["409"] = _answer(
            "Conflicts with the object's state or a concurrent change.", "FieldErrors"
        )
    if throttled:
        errors["429"] = _answer("Too many tries: throttled or locked out.", "Detail")
    return errors


def _views(generator) -> dict[tuple[str, str], type]:
    """The view class behind each (path, method) of the schema."""
    return {
        (path, method.lower()): getattr(callback, "cls", None)
        for path, _regex, method, callback in generator.endpoints or []
    }


def document_errors(result: dict, generator, **kwargs) -> dict:
    """Add each operation's error answers, and say when a webhook's secret is returned."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Detail"], schemas["FieldErrors"] = DETAIL, FIELD_ERRORS
    views = _views(generator)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            view = views.get((path, method))
            throttled = bool(getattr(view, "throttle_classes", None))
            errors = _errors(method, operation, throttled)
            for code, answer in errors.items():
                operation["responses"].setdefault(code, answer)
    _secret_only_on_create(schemas)
    _list_bounds(schemas, generator)
    _create_only(schemas, generator)
    _request_patterns(schemas, generator)
    _exclusive(schemas, generator)
    _validator_patterns(schemas, generator)
    info = result.setdefault("info", {})
    info["description"] = info.get("description", "") + STORABLE_TEXT
    return result


def _serializers(schemas: dict, generator):
    """(component schema, serializer instance) of every serializer component."""
    # the registry maps each schema component to its serializer (no public accessor for this)
    for component in getattr(generator.registry, "_components", {}).values():
        schema = schemas.get(component.name)
        serializer = force_instance(component.object)
        if schema and isinstance(serializer, serializers.Serializer):
            yield component.name, schema, serializer


def _create_only(schemas: dict, generator) -> None:
    """A PATCH body has no fields fixed at creation (a serializer's `create_only`, e.g. a node's
    name): sending one is refused unless it is unchanged, so the schema does not offer it."""
    for name, schema, serializer in _serializers(schemas, generator):
        fixed = getattr(serializer, "create_only", ())
        if not name.startswith("Patched") or not fixed:
            continue
        for field in fixed:
            schema.get("properties", {}).pop(field, None)
        if "required" in schema:
            schema["required"] = [field for field in schema["required"] if field not in fixed]


def _request_patterns(schemas: dict, generator) -> None:
    """A field's `request_pattern` (e.g. a webhook's URL) in place of its format, and its
    `key_pattern` as the names an object's keys take, in request bodies only: what a client may
    send, narrower than what an answer may show."""
    for name, schema, serializer in _serializers(schemas, generator):
        if not name.endswith("Request"):
            continue
        for field_name, field in serializer.fields.items():
            prop = schema.get("properties", {}).get(field_name)
            pattern = getattr(field, "request_pattern", None)
            if prop is not None and pattern:
                prop.pop("format", None)
                prop["pattern"] = pattern
            key_pattern = getattr(field, "key_pattern", None)  # an object's keys (environment)
            if prop is not None and key_pattern:
                prop["propertyNames"] = {"pattern": key_pattern}


def _exclusive(schemas: dict, generator) -> None:
    """Fields of which a request body gives exactly one (a serializer's `exactly_one` pairs, e.g.
    a job's gpus or gpu_memory): `oneOf: [{required: [a]}, {required: [b]}]`."""
    for name, schema, serializer in _serializers(schemas, generator):
        pairs = getattr(serializer, "exactly_one", ())
        if not name.endswith("Request") or not pairs:
            continue
        rules = [{"oneOf": [{"required": [field]} for field in pair]} for pair in pairs]
        schema["allOf"] = [*schema.get("allOf", []), *rules]


def _validator_patterns(schemas: dict, generator) -> None:
    """The pattern of a text field's name validator (a DNS label or name), which
    drf-spectacular cannot see through the wrapper that reports it under the field."""
    patterns = {
        validate_dns_label: DNS_LABEL.pattern,
        validate_dns_subdomain: DNS_SUBDOMAIN.pattern,
        validate_mount_path: MOUNT_PATH,
    }
    for name, schema, serializer in _serializers(schemas, generator):
        if not name.endswith("Request"):
            continue
        for field_name, field in serializer.fields.items():
            prop = schema.get("properties", {}).get(field_name)
            child = getattr(field, "child", None)  # a list's items (a project's node pools)
            for target, text_field in ((prop, field), (prop and prop.get("items"), child)):
                for validator in getattr(text_field, "validators", []):
                    wrapped = getattr(validator, "__wrapped__", None)
                    pattern = patterns.get(wrapped) if callable(wrapped) else None
                    if isinstance(target, dict) and pattern and "pattern" not in target:
                        target["pattern"] = pattern
            places = getattr(field, "decimal_places", None)
            if prop is not None and isinstance(field, serializers.DecimalField) and places:
                prop["multipleOf"] = 10.0**-places  # what the API keeps (portal.api.fields)


def _list_bounds(schemas: dict, generator) -> None:
    """minItems/maxItems of lists the serializers bound (`allow_empty=False`, `min_length`,
    `max_length` of a `many=True` serializer or a ListField), which drf-spectacular leaves out:
    an empty bulk submission is refused, so the schema must say at least one."""
    for _, schema, serializer in _serializers(schemas, generator):
        for name, field in serializer.fields.items():
            prop = schema.get("properties", {}).get(name)
            if prop is not None and prop.get("type") == "array":
                _bound(prop, field)


def _bound(prop: dict, field) -> None:
    """Set the item bounds of one array property from its field."""
    if not isinstance(field, serializers.ListSerializer | serializers.ListField):
        return
    least = field.min_length or 0
    if not field.allow_empty:
        least = max(least, 1)
    if least:
        prop["minItems"] = max(prop.get("minItems", 0), least)
    if field.max_length is not None:
        prop["maxItems"] = min(prop.get("maxItems", field.max_length), field.max_length)


def _secret_only_on_create(schemas: dict) -> None:
    """A webhook's signing secret is in the answer to the POST that creates it, never again:
    not a required property of the webhook."""
    webhook = schemas.get("Webhook")
    if webhook and "secret" in webhook.get("properties", {}):
        webhook["required"] = [name for name in webhook.get("required", []) if name != "secret"]
        webhook["properties"]["secret"]["description"] = (
            "The signing secret (HMAC-SHA256 key): only in the answer to the POST that creates "
            "the webhook."
        )
