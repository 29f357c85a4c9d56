"""The OpenAPI schema's error answers: what each operation can really answer besides success.

drf-spectacular documents the success only; this hook (SPECTACULAR_SETTINGS
`POSTPROCESSING_HOOKS`) adds the errors every API view shares, in the portal's error shape
(`portal.api.errors`): `{"field": ["reason"]}` for a bad request, `{"detail": "reason"}` for the
request as a whole. Schemathesis checks every answer against it
(tests/portal/api/test_schema_conformance.py).
"""

from __future__ import annotations

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
    return result


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
