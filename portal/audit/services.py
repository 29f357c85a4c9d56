"""Recording audit entries: the only write the portal makes to the audit log.

Services call `record(action, target, changes=...)` inside their own transaction, so an entry is
stored exactly when the change it describes is (a 409 that rolls the change back leaves no
entry). Who did it and from where come from the request being served (`portal.audit.context`);
without one the actor is "system". Changes are {field: [before, after]} with plain JSON values
(`diff` of two `snapshot`s).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from decimal import Decimal

from portal.audit.context import actor_of, current_request
from portal.audit.models import SYSTEM, AuditEntry

ANONYMOUS = "anonymous"


def record(
    action: str,
    target=None,
    *,
    changes: dict | None = None,
    note: str = "",
    label: str | None = None,
    actor=None,
    username: str | None = None,
    request=None,
    signing_in=None,
) -> AuditEntry:
    """Store one entry: `action` (a dotted code, e.g. `project.quota_changed`) done to `target`
    (a model instance, a (type, id, label) tuple, or None) by `actor` (default: the request's
    user) or, when no account is known, `username` (a failed sign-in's name). `signing_in` is
    the account a request signs in, its actor while the request has no signed-in user yet."""
    entry = new_entry(action, target, changes=changes, note=note, label=label, actor=actor,
                      username=username, request=request, signing_in=signing_in)  # fmt: skip
    entry.save()
    return entry


def record_many(action: str, targets: Iterable, *, note: str = "") -> list[AuditEntry]:
    """One entry per target, in one INSERT (a bulk submission's jobs)."""
    return AuditEntry.objects.bulk_create(
        new_entry(action, target, note=note) for target in targets
    )


def new_entry(action: str, target=None, *, changes=None, note="", label=None, actor=None,
              username=None, request=None, signing_in=None) -> AuditEntry:  # fmt: skip
    """An unsaved entry (see `record`)."""
    user, name, address = _who(actor, username, request, signing_in)
    kind, ident, text = _target(target)
    return AuditEntry(
        actor=user,
        actor_username=name[:150],
        address=address,
        action=action,
        target_type=kind,
        target_id=ident,
        target_label=(label if label is not None else text)[:255],
        changes={field: [plain(b), plain(a)] for field, (b, a) in (changes or {}).items()},
        note=note[:255],
    )


def record_changes(
    target, before: dict, actions: dict[str, Iterable[str] | None], *, label: str | None = None
) -> None:
    """Record what changed in `target` since `before` (its `snapshot`): one entry per action of
    `actions` whose fields changed, in order; an action with None takes the fields left."""
    changes = diff(before, snapshot(target, before))
    for action, fields in actions.items():
        mine = {f: changes.pop(f) for f in list(changes) if fields is None or f in fields}
        if mine:
            record(action, target, changes=mine, label=label)


def snapshot(obj, fields: Iterable[str]) -> dict:
    """The object's `fields` as plain values, to compare before and after a change."""
    return {field: plain(getattr(obj, field)) for field in fields}


def diff(before: dict, after: dict) -> dict:
    """{field: [before, after]} for the fields whose value changed."""
    return {
        field: [before.get(field), after.get(field)]
        for field in after
        if before.get(field) != after.get(field)
    }


def plain(value):
    """A value as JSON keeps it: GPU amounts as numbers, times as ISO 8601."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if value is None or isinstance(value, bool | int | float | str | dict):
        return value
    return str(value)


def _who(actor, username, request, signing_in=None) -> tuple[object | None, str, str | None]:
    request = request if request is not None else current_request()
    address = None
    if request is not None:
        user, address = actor_of(request)
        actor = actor or user or signing_in
    if actor is not None and getattr(actor, "is_authenticated", False):
        return actor, actor.get_username(), address
    if username:
        return None, username, address
    return None, ANONYMOUS if request is not None else SYSTEM, address


def _target(target) -> tuple[str, str, str]:
    if target is None:
        return "", "", ""
    if isinstance(target, tuple):  # (type, id, label) of an object not at hand
        return tuple(str(part) for part in target)
    return target._meta.model_name, str(target.pk or ""), str(target)
